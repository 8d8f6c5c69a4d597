//! `[[dama]]` tables: DVB-RCS return links shared by several terminals (see
//! `satpep_proto::dama` and `docs/dama.md`).

use satpep_proto::dama::DamaConfig;
use satpep_proto::link::LinkConfig;
use toml::Value;

use std::collections::HashSet;

use super::{join, join_index, key, typed_rel, Builder, Nodes, Result};
use crate::keys::Seg;
use crate::spec::{DamaSpec, LinkSpec};

/// Keys of a `[[dama]]` table that are not [`DamaConfig`] fields.
const DAMA_OWN_KEYS: &[&str] = &["name", "gateway", "terminals"];

impl Builder<'_, '_> {
    /// Read the `[[dama]]` tables and append one return interface per terminal to `links`.
    pub(super) fn dama(&self, nodes: &Nodes, links: &mut Vec<LinkSpec>) -> Result<Vec<DamaSpec>> {
        let mut out: Vec<DamaSpec> = Vec::new();
        let mut taken: HashSet<String> = HashSet::new();
        let mut link_names: HashSet<String> = links.iter().map(|l| l.name.clone()).collect();
        for (i, t) in self.array_of_tables("dama")?.iter().enumerate() {
            let path = join_index(&key("dama"), i);
            let name = self.name(t, &path, |n| taken.contains(n), "dama link")?;
            taken.insert(name.clone());
            let gateway = self.node_ref(t, &path, "gateway", nodes)?;
            let names = self.require::<Vec<String>>(t, &path, "terminals")?;
            // `"t{0..1000}"` stands for t0 … t999.
            let names = super::expand::expand_ranges(&names, super::MAX_NODES)
                .map_err(|msg| self.err(&join(&path, "terminals"), msg))?;
            if names.is_empty() {
                return Err(self.err(
                    &join(&path, "terminals"),
                    "a DAMA link needs at least one terminal",
                ));
            }
            let mut rest = (*t).clone();
            for k in DAMA_OWN_KEYS {
                rest.remove(*k);
            }
            let config =
                typed_rel::<DamaConfig>(&Value::Table(rest)).map_err(|(rel, mut msg)| {
                    if msg.starts_with("unknown field") && rel.len() == 1 {
                        msg.push_str(", `name`, `gateway` or `terminals`");
                    }
                    self.err(&[path.clone(), rel].concat(), msg)
                })?;
            config.validate().map_err(|e| {
                let (rel, msg) = split_key(&e);
                self.err(&[path.clone(), rel].concat(), msg)
            })?;
            let mut terminals = Vec::with_capacity(names.len());
            let mut listed = HashSet::with_capacity(names.len());
            let tpath = join(&path, "terminals");
            for (j, n) in names.iter().enumerate() {
                let Some(&idx) = nodes.index.get(n) else {
                    return Err(self.err(&join_index(&tpath, j), format!("no node named `{n}`")));
                };
                if idx == gateway {
                    return Err(self.err(
                        &join_index(&tpath, j),
                        format!("`{n}` is the gateway; terminals send toward it"),
                    ));
                }
                if !listed.insert(idx) {
                    return Err(self.err(
                        &join_index(&tpath, j),
                        format!("terminal `{n}` is listed twice"),
                    ));
                }
                terminals.push(idx);
            }
            let cra_sum = u64::from(config.terminal.cra_slots) * terminals.len() as u64;
            if cra_sum > u64::from(config.slots_per_frame) {
                return Err(self.err(
                    &[
                        path.clone(),
                        vec![Seg::Key("terminal".into()), Seg::Key("cra_slots".into())],
                    ]
                    .concat(),
                    format!(
                        "{} terminals × {} CRA slots is more than the {} slots of a frame",
                        terminals.len(),
                        config.terminal.cra_slots,
                        config.slots_per_frame
                    ),
                ));
            }
            let mut link_ids = Vec::with_capacity(terminals.len());
            for &term in &terminals {
                let lname = format!("{name}.{}", nodes[term].name);
                if !link_names.insert(lname.clone()) {
                    return Err(self.err(
                        &join(&path, "name"),
                        format!(
                            "the return interface `{lname}` clashes with a [[link]] of that name"
                        ),
                    ));
                }
                let mut lc = LinkConfig::default();
                lc.rate = config.carrier;
                lc.delay = config.delay;
                link_ids.push(links.len());
                links.push(LinkSpec {
                    name: lname,
                    from: term,
                    to: gateway,
                    config: lc,
                });
            }
            out.push(DamaSpec {
                name,
                gateway,
                terminals,
                links: link_ids,
                config,
            });
        }
        Ok(out)
    }
}

/// "terminal.cra_slots: message" → (path, message); a message without a key path stays whole.
fn split_key(e: &str) -> (Vec<Seg>, String) {
    match e.split_once(": ") {
        Some((k, msg)) if !k.is_empty() && !k.contains(' ') => (
            k.split('.').map(|s| Seg::Key(s.to_owned())).collect(),
            msg.to_owned(),
        ),
        _ => (Vec::new(), e.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use crate::load_str;

    const BASE: &str = r#"
[[node]]
name = "gw"
[[node]]
name = "a"
[[node]]
name = "b"
[[link]]
name = "fwd"
from = "gw"
to = "a"
[[link]]
name = "fwd2"
from = "gw"
to = "b"
[[dama]]
name = "rcs"
gateway = "gw"
terminals = ["a", "b"]
terminal = { cra_slots = 2 }
[[flow]]
from = "a"
to = "gw"
"#;

    #[test]
    fn dama_adds_return_interfaces_after_the_links_and_routes_through_them() {
        let l = load_str(BASE, "t.toml", &[]).expect("loads");
        let s = &l.scenario;
        let names: Vec<&str> = s.links.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["fwd", "fwd2", "rcs.a", "rcs.b"]);
        assert_eq!(s.dama[0].links, vec![2, 3]);
        assert_eq!(s.dama[0].terminals, vec![1, 2]);
        assert_eq!(s.links[2].config.rate.bps(), 2_048_000);
        assert_eq!(
            s.routes.next(1, 0),
            Some(2),
            "a reaches gw through its return interface"
        );
        assert_eq!(s.dama[0].config.terminal.cra_slots, 2);
        // run.json's resolved table loads back to the same scenario (no duplicate links).
        let again = load_str(&toml::to_string(&l.resolved).expect("toml"), "t.toml", &[])
            .expect("resolved loads");
        assert_eq!(again.scenario, l.scenario);
        // --set reaches the DAMA settings by name.
        let l =
            load_str(BASE, "t.toml", &["dama.rcs.response_superframes=20".into()]).expect("set");
        assert_eq!(l.scenario.dama[0].config.response_superframes, 20);
    }

    #[test]
    fn dama_errors_name_the_key() {
        let err = |over: &str| {
            load_str(BASE, "t.toml", &[over.to_owned()])
                .expect_err("must fail")
                .to_string()
        };
        let e = err("dama.rcs.terminal.cra_slots=20");
        assert!(
            e.contains("dama.rcs.terminal.cra_slots") && e.contains("2 terminals × 20"),
            "{e}"
        );
        let e = err("dama.rcs.response_superframes=3");
        assert!(
            e.contains("response_superframes") && e.contains("2 × delay"),
            "{e}"
        );
        let e = err("dama.rcs.terminal.rbdc_gamma=0");
        assert!(e.contains("terminal.rbdc_gamma"), "{e}");
        let e = err("dama.rcs.terminals=[\"gw\"]");
        assert!(e.contains("is the gateway"), "{e}");
        let e = err("dama.rcs.slotz=3");
        assert!(e.contains("unknown field `slotz`"), "{e}");
    }
}
