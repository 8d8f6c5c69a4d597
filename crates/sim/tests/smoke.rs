use satpep_sim::Simulation;

#[test]
fn default_scenario_runs() {
    let loaded = satpep_scenario::load_str(satpep_scenario::default_scenario_text(), "<built-in>", &[]).expect("loads");
    let sim = Simulation::new(&loaded.scenario);
    let r = sim.run(|_| {}).expect("runs");
    println!("{}", satpep_output::render_table(&r.summary));
    println!("events {} data packets {}", r.events, r.data_packets);
}
