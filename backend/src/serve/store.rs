//! Share links: the stored state of the app (source and settings) under a random id.
//!
//! One trait, [`ShareStore`], so that the handlers do not know where states live:
//! SQLite in the data folder today ([`SqliteStore`]), a networked database when several
//! machines serve one site. SQLite runs in WAL mode with `synchronous=FULL`: a share is
//! on disk before its id is answered, so it survives `kill -9` of the server (and a power
//! cut) right after. The schema is versioned with `PRAGMA user_version` and migrated on
//! open, one step per version.

use rusqlite::{params, Connection, OptionalExtension};
use std::path::Path;
use std::sync::Mutex;

/// A stored state.
#[derive(Clone, Debug, PartialEq)]
pub struct Shared {
    pub id: String,
    pub source: String,
    /// JSON text, as the client sent it.
    pub settings: String,
    pub created_at: i64,
}

/// Where share links live. Implementations must be safe to call from many threads and,
/// for scale-out, from many processes at once.
pub trait ShareStore: Send + Sync {
    /// Stores a state and returns its id; an identical state already stored keeps its id.
    fn put(&self, source: &str, settings: &str) -> Result<String, String>;
    /// The state stored under `id`, if any.
    fn get(&self, id: &str) -> Result<Option<Shared>, String>;
}

/// The schema, one entry per version: `MIGRATIONS[i]` takes version `i` to `i + 1`.
const MIGRATIONS: &[&str] = &["CREATE TABLE shares (
        id TEXT PRIMARY KEY,
        -- xxh3-128 of the state, to find an identical one; NULL for a second state
        -- that collides with another's hash (the hash is not cryptographic).
        hash BLOB UNIQUE,
        source TEXT NOT NULL,
        settings TEXT NOT NULL,
        created_at INTEGER NOT NULL
    ) STRICT;"];

pub struct SqliteStore {
    conn: Mutex<Connection>,
}

impl SqliteStore {
    /// Opens (or creates) `shares.sqlite3` in `dir`, migrating it to the current schema.
    pub fn open(dir: &Path) -> Result<SqliteStore, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create the data folder {}: {e}", dir.display()))?;
        let path = dir.join("shares.sqlite3");
        let conn = Connection::open(&path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        let setup = || -> rusqlite::Result<()> {
            conn.pragma_update(None, "journal_mode", "WAL")?;
            conn.pragma_update(None, "synchronous", "FULL")?;
            // Other server processes may hold the write lock for a moment.
            conn.busy_timeout(std::time::Duration::from_secs(5))?;
            Ok(())
        };
        setup().map_err(|e| format!("cannot set up {}: {e}", path.display()))?;
        migrate(&conn).map_err(|e| format!("cannot migrate {}: {e}", path.display()))?;
        Ok(SqliteStore { conn: Mutex::new(conn) })
    }
}

/// Applies the migrations past the file's `user_version`, each in its own transaction.
fn migrate(conn: &Connection) -> rusqlite::Result<()> {
    let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if version as usize > MIGRATIONS.len() {
        return Err(rusqlite::Error::InvalidParameterName(format!(
            "the database has schema version {version}, newer than this server's {}",
            MIGRATIONS.len()
        )));
    }
    for (v, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
        let tx = conn.unchecked_transaction()?;
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", (v + 1) as i64)?;
        tx.commit()?;
    }
    Ok(())
}

/// 96 random bits as URL-safe base64 (16 characters).
fn new_id() -> Result<String, String> {
    use base64::Engine as _;
    let mut bytes = [0u8; 12];
    getrandom::fill(&mut bytes).map_err(|e| format!("no randomness for an id: {e}"))?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

fn state_hash(source: &str, settings: &str) -> Vec<u8> {
    let mut s = Vec::with_capacity(source.len() + settings.len() + 16);
    s.extend_from_slice(&(source.len() as u64).to_le_bytes());
    s.extend_from_slice(source.as_bytes());
    s.extend_from_slice(settings.as_bytes());
    xxhash_rust::xxh3::xxh3_128(&s).to_le_bytes().to_vec()
}

impl ShareStore for SqliteStore {
    fn put(&self, source: &str, settings: &str) -> Result<String, String> {
        let hash = state_hash(source, settings);
        let conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        let existing: Option<(String, String, String)> = conn
            .query_row("SELECT id, source, settings FROM shares WHERE hash = ?1", params![hash], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .optional()
            .map_err(|e| e.to_string())?;
        let hash_column = match existing {
            Some((id, s, t)) if s == source && t == settings => return Ok(id),
            // Another state with the same hash: store this one without a hash.
            Some(_) => None,
            None => Some(hash),
        };
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64);
        // A fresh id collides with a stored one with odds of n / 2^96; retry anyway.
        for _ in 0..4 {
            let id = new_id()?;
            match conn.execute(
                "INSERT INTO shares (id, hash, source, settings, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![id, hash_column, source, settings, now],
            ) {
                Ok(_) => return Ok(id),
                Err(rusqlite::Error::SqliteFailure(e, _)) if e.code == rusqlite::ErrorCode::ConstraintViolation => {
                    // Another process stored the same state a moment ago.
                    if let Some(h) = &hash_column {
                        let id: Option<String> = conn
                            .query_row("SELECT id FROM shares WHERE hash = ?1", params![h], |r| r.get(0))
                            .optional()
                            .map_err(|e| e.to_string())?;
                        if let Some(id) = id {
                            return Ok(id);
                        }
                    }
                }
                Err(e) => return Err(e.to_string()),
            }
        }
        Err("could not find a free id".into())
    }

    fn get(&self, id: &str) -> Result<Option<Shared>, String> {
        let conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        conn.query_row("SELECT id, source, settings, created_at FROM shares WHERE id = ?1", params![id], |r| {
            Ok(Shared { id: r.get(0)?, source: r.get(1)?, settings: r.get(2)?, created_at: r.get(3)? })
        })
        .optional()
        .map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("hloscope-store-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn put_get_dedupe_and_reopen() {
        let dir = temp_dir("basic");
        let store = SqliteStore::open(&dir).unwrap();
        let a = store.put("module A", "{\"pass\":3}").unwrap();
        let b = store.put("module B", "{}").unwrap();
        assert_ne!(a, b);
        assert_eq!(a.len(), 16);
        assert!(a.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'));
        // The same state keeps its id.
        assert_eq!(store.put("module A", "{\"pass\":3}").unwrap(), a);
        assert_eq!(store.get("nope").unwrap(), None);
        drop(store);
        let store = SqliteStore::open(&dir).unwrap();
        let got = store.get(&a).unwrap().unwrap();
        assert_eq!((got.source.as_str(), got.settings.as_str()), ("module A", "{\"pass\":3}"));
        let version: i64 = store.conn.lock().unwrap().pragma_query_value(None, "user_version", |r| r.get(0)).unwrap();
        assert_eq!(version, MIGRATIONS.len() as i64);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_newer_schema_is_refused() {
        let dir = temp_dir("newer");
        drop(SqliteStore::open(&dir).unwrap());
        let conn = Connection::open(dir.join("shares.sqlite3")).unwrap();
        conn.pragma_update(None, "user_version", 99).unwrap();
        drop(conn);
        let err = SqliteStore::open(&dir).err().unwrap();
        assert!(err.contains("schema version 99"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
