//! The middlebox hook: a router hands every packet to its middlebox and routes what comes out.

use satpep_sim::Simulation;

fn run(extra_gateway: &str) -> satpep_output::Summary {
    let text = satpep_scenario::default_scenario_text().replace(
        "name = \"gateway\"        # the satellite gateway (hub); forwards only\nkind = \"router\"",
        &format!("name = \"gateway\"\nkind = \"router\"\n{extra_gateway}"),
    );
    assert!(
        text.contains("name = \"gateway\"\nkind"),
        "default scenario layout changed"
    );
    let loaded = satpep_scenario::load_str(&text, "mb", &["duration=\"20s\"".into()])
        .unwrap_or_else(|e| panic!("{e}"));
    Simulation::new(&loaded.scenario)
        .run(|_| {})
        .expect("runs")
        .summary
}

#[test]
fn pass_through_middlebox_changes_nothing() {
    let plain = run("");
    let with = run("middlebox = { kind = \"pass_through\" }");
    assert_eq!(plain.flows, with.flows);
    assert_eq!(plain.links, with.links);
    assert!(plain.flows[0].bytes_delivered > 1_000_000);
}

#[test]
fn middlebox_only_on_routers_and_unknown_kinds_are_named() {
    let text = satpep_scenario::default_scenario_text().replace(
        "name = \"client\"",
        "name = \"client\"\nmiddlebox = { kind = \"pass_through\" }",
    );
    let e = satpep_scenario::load_str(&text, "x.toml", &[])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("node.client.middlebox") && e.contains("router"),
        "{e}"
    );
    let e = satpep_scenario::load_str(
        satpep_scenario::default_scenario_text(),
        "x.toml",
        &["node.gateway.middlebox={ kind = \"teleporter\" }".into()],
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("teleporter") && e.contains("pass_through"),
        "{e}"
    );
}
