//! The fusion knobs as text (`--fusion` on the command line, a text field in the UI):
//! a comma list such as `no-multi-output,max-size=16,never=exp.1:add.2`.
//!
//! Parsed here, in the core, so that every front end accepts the same spelling and
//! reports the same errors.

use super::FusionConfig;

/// Every knob the spec accepts, for error messages and help text.
pub const FUSION_KNOBS: &str = "off, on, no-multi-output, no-epilogue, no-duplication, max-size=N, \
never=PRODUCER:CONSUMER, force=PRODUCER:CONSUMER";

impl FusionConfig {
    /// The default configuration changed by each knob of `spec`, left to right (an empty
    /// spec is the default). Errors name the offending knob and list the valid ones.
    pub fn from_spec(spec: &str) -> Result<FusionConfig, String> {
        let mut cfg = FusionConfig::default();
        for knob in spec.split(',').map(str::trim).filter(|k| !k.is_empty()) {
            let (key, value) = match knob.split_once('=') {
                Some((k, v)) => (k.trim(), Some(v.trim())),
                None => (knob, None),
            };
            let no_value = |flag: &mut bool, to: bool| match value {
                None => {
                    *flag = to;
                    Ok(())
                }
                Some(_) => Err(format!("fusion knob `{knob}`: `{key}` takes no value")),
            };
            match key {
                "off" => no_value(&mut cfg.enabled, false)?,
                "on" => no_value(&mut cfg.enabled, true)?,
                "no-multi-output" => no_value(&mut cfg.multi_output, false)?,
                "no-epilogue" => no_value(&mut cfg.epilogue, false)?,
                "no-duplication" => no_value(&mut cfg.allow_duplication, false)?,
                "max-size" => {
                    let v = value.ok_or_else(|| format!("fusion knob `{knob}`: write max-size=N"))?;
                    cfg.max_fusion_size = v
                        .parse()
                        .map_err(|_| format!("fusion knob `{knob}`: max-size takes a whole number, not `{v}`"))?;
                }
                "never" | "force" => {
                    let v = value.ok_or_else(|| format!("fusion knob `{knob}`: write {key}=PRODUCER:CONSUMER"))?;
                    let edge = match v.split_once(':') {
                        Some((p, c)) if !p.trim().is_empty() && !c.trim().is_empty() => {
                            (p.trim().trim_start_matches('%').to_string(), c.trim().trim_start_matches('%').to_string())
                        }
                        _ => {
                            return Err(format!(
                                "fusion knob `{knob}`: {key} takes PRODUCER:CONSUMER (two instruction names), not `{v}`"
                            ))
                        }
                    };
                    if key == "never" {
                        cfg.never_fuse.push(edge);
                    } else {
                        cfg.force_fuse.push(edge);
                    }
                }
                _ => return Err(format!("unknown fusion knob `{knob}` (known: {FUSION_KNOBS})")),
            }
        }
        Ok(cfg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knobs_map_onto_the_config() {
        assert_eq!(FusionConfig::from_spec("").unwrap(), FusionConfig::default());
        let cfg = FusionConfig::from_spec(
            "no-multi-output, no-epilogue,max-size=8,no-duplication,never=exp.1:add.2,force=%a:%b",
        )
        .unwrap();
        assert!(cfg.enabled && !cfg.multi_output && !cfg.epilogue && !cfg.allow_duplication);
        assert_eq!(cfg.max_fusion_size, 8);
        assert_eq!(cfg.never_fuse, vec![("exp.1".to_string(), "add.2".to_string())]);
        assert_eq!(cfg.force_fuse, vec![("a".to_string(), "b".to_string())]);
        assert!(!FusionConfig::from_spec("off").unwrap().enabled);
    }

    #[test]
    fn bad_knobs_say_what_is_wrong() {
        let err = |s: &str| FusionConfig::from_spec(s).unwrap_err();
        assert!(err("fast").contains("unknown fusion knob `fast`") && err("fast").contains("max-size=N"));
        assert!(err("max-size=big").contains("takes a whole number, not `big`"));
        assert!(err("max-size").contains("write max-size=N"));
        assert!(err("never=exp.1").contains("PRODUCER:CONSUMER"));
        assert!(err("off=1").contains("takes no value"));
    }
}
