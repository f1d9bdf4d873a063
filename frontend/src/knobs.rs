//! The fusion lab's settings as the text the compiler reads: a `--fusion` knob list
//! (`off, no-epilogue, max-size=8, never=dot.5:add.8`), edited one knob at a time by the
//! lab's controls and the decisions' override buttons. The text is the state (it goes in the
//! URL and to the worker as it is); these functions read and change one knob of it.

/// The on/off knobs the lab offers, with what each does.
pub const SWITCHES: [(&str, &str); 4] = [
    ("off", "no fusion at all: every instruction its own kernel"),
    ("no-multi-output", "no sibling or multi-output fusion"),
    ("no-epilogue", "nothing fused into a dot's or convolution's epilogue"),
    ("no-duplication", "never copy a cheap producer into several kernels"),
];

fn items(spec: &str) -> impl Iterator<Item = &str> {
    spec.split(',').map(str::trim).filter(|k| !k.is_empty())
}

fn key(item: &str) -> &str {
    item.split_once('=').map_or(item, |(k, _)| k.trim())
}

fn join(items: Vec<String>) -> String {
    items.join(", ")
}

/// Whether the switch `name` is on.
pub fn has(spec: &str, name: &str) -> bool {
    items(spec).any(|k| k == name)
}

/// `spec` with the switch `name` on or off.
pub fn set(spec: &str, name: &str, on: bool) -> String {
    let mut out: Vec<String> = items(spec).filter(|k| *k != name).map(str::to_string).collect();
    if on {
        out.push(name.to_string());
    }
    join(out)
}

/// The `max-size=N` knob's value.
pub fn max_size(spec: &str) -> Option<usize> {
    items(spec).filter(|k| key(k) == "max-size").find_map(|k| k.split_once('=')?.1.trim().parse().ok())
}

/// `spec` with `max-size` set to `n` (removed for None).
pub fn set_max_size(spec: &str, n: Option<usize>) -> String {
    let mut out: Vec<String> = items(spec).filter(|k| key(k) != "max-size").map(str::to_string).collect();
    if let Some(n) = n {
        out.push(format!("max-size={n}"));
    }
    join(out)
}

/// A per-edge override: never fuse, or force, `producer` into `consumer`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Override {
    pub force: bool,
    pub producer: String,
    pub consumer: String,
}

impl Override {
    fn knob(&self) -> String {
        format!("{}={}:{}", if self.force { "force" } else { "never" }, self.producer, self.consumer)
    }
}

/// The overrides in `spec`, in order.
pub fn overrides(spec: &str) -> Vec<Override> {
    items(spec)
        .filter_map(|k| {
            let (key, value) = k.split_once('=')?;
            let force = match key.trim() {
                "never" => false,
                "force" => true,
                _ => return None,
            };
            let (p, c) = value.split_once(':')?;
            Some(Override { force, producer: p.trim().to_string(), consumer: c.trim().to_string() })
        })
        .collect()
}

/// `spec` with `o` added (replacing any override of the same edge).
pub fn add_override(spec: &str, o: &Override) -> String {
    let mut out: Vec<String> = items(spec).filter(|k| !same_edge(k, o)).map(str::to_string).collect();
    out.push(o.knob());
    join(out)
}

/// `spec` without any override of `o`'s edge.
pub fn remove_override(spec: &str, o: &Override) -> String {
    join(items(spec).filter(|k| !same_edge(k, o)).map(str::to_string).collect())
}

fn same_edge(item: &str, o: &Override) -> bool {
    overrides(item).first().is_some_and(|x| x.producer == o.producer && x.consumer == o.consumer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knobs_turn_on_and_off_one_at_a_time() {
        let s = set("", "off", true);
        assert_eq!(s, "off");
        let s = set(&s, "no-epilogue", true);
        assert!(has(&s, "off") && has(&s, "no-epilogue") && !has(&s, "no-duplication"));
        assert_eq!(set(&s, "off", false), "no-epilogue");
        let s = set_max_size(&s, Some(8));
        assert_eq!(max_size(&s), Some(8));
        assert_eq!(set_max_size(&s, Some(3)), "off, no-epilogue, max-size=3");
        assert_eq!(set_max_size(&s, None), "off, no-epilogue");
    }

    #[test]
    fn an_override_replaces_the_last_one_of_its_edge() {
        let never = Override { force: false, producer: "dot.5".into(), consumer: "add.8".into() };
        let s = add_override("no-epilogue", &never);
        assert_eq!(s, "no-epilogue, never=dot.5:add.8");
        assert_eq!(overrides(&s), vec![never.clone()]);
        let force = Override { force: true, ..never.clone() };
        let s = add_override(&s, &force);
        assert_eq!(s, "no-epilogue, force=dot.5:add.8");
        assert_eq!(remove_override(&s, &never), "no-epilogue");
    }
}
