//! Runs every packetdrill-style script under tests/tcp (syntax: `satpep_proto::tcp::script`)
//! against the sans-IO endpoint, each under every profile it names, and reports all failures.

use std::path::{Path, PathBuf};

use satpep_proto::tcp::script::Script;

fn scripts(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            scripts(&p, out);
        } else if p.extension().is_some_and(|x| x == "pkt") {
            out.push(p);
        }
    }
}

#[test]
fn every_script_passes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/tcp");
    let mut files = Vec::new();
    scripts(&root, &mut files);
    files.sort();
    let mut failures = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).expect("script readable");
        let name = f.strip_prefix(&root).unwrap_or(f).display().to_string();
        if let Err(e) = Script::parse(&text).and_then(|s| s.run()) {
            failures.push(format!("{name}: {e}"));
        }
    }
    println!("{} scripts, {} failed", files.len(), failures.len());
    assert!(files.len() >= 60, "the suite has {} scripts", files.len());
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

/// A script that expects the wrong thing must fail, at the right line: the runner is not
/// a rubber stamp.
#[test]
fn a_wrong_expectation_fails_at_its_line() {
    let good = "tcp mss = 1000, timestamps = false
0 listen
+0 < S 0:0(0) win 65535 <mss 1000,sackOK,wscale 7>
+0 > S. 0:0(0) ack 1 <mss 1000,sackOK,wscale 7>
";
    Script::parse(good)
        .and_then(|s| s.run())
        .expect("good script");
    for (wrong, line) in [
        (good.replace("> S. 0:0(0) ack 1", "> S. 0:0(0) ack 2"), 4),
        (good.replace("wscale 7>\n+0 >", "wscale 7>\n+0.1 >"), 4),
        (format!("{good}+1 % state == established\n"), 5),
        (format!("{good}*  > . 1:1(0) ack 1\n"), 5),
        (
            format!(
                "{good}+0.1 < . 1:1(0) ack 1 win 100\n+0 write 1000\n+1 < . 1:1(0) ack 1 win 100\n"
            ),
            7,
        ),
    ] {
        let e = Script::parse(&wrong)
            .and_then(|s| s.run())
            .expect_err(&wrong);
        assert_eq!(e.line, line, "{wrong}\n{e}");
    }
}

/// Issue 36 (13): a bad `tcp` header was reported as "line 0" when the script ran, and a
/// script with no timed line passed (it checks nothing).
#[test]
fn a_bad_tcp_header_is_reported_at_its_line_and_an_empty_script_is_refused() {
    let e = Script::parse("// header\ntcp mss = 1000\ntcp initial_window = \"ten\"\n0 listen\n")
        .and_then(|s| s.run())
        .expect_err("a string window");
    assert_eq!(e.line, 3, "{e}");
    assert!(e.to_string().starts_with("line 3: tcp header: "), "{e}");
    let e = Script::parse("tcp no_such_key = 1\n0 listen\n").expect_err("unknown key");
    assert_eq!(e.line, 1, "{e}");
    for empty in [
        "",
        "// only a comment\n",
        "tcp mss = 1000\nprofiles rfc linux\n",
    ] {
        let e = Script::parse(empty).expect_err(empty);
        assert!(e.to_string().contains("no timed line"), "{e}");
        assert!(!e.to_string().contains("line 0"), "{e}");
    }
}
