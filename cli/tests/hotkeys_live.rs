//! Hot keys: the tag audit, through the `memshard` command. (The near cache and key replicas
//! are scenarios run on both clients: tests/scenarios/hot.rs.)

#[test]
fn tag_audit_flags_a_planted_wide_tag() {
    let dir = std::env::temp_dir().join(format!("memshard-tags-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut keys = String::new();
    for i in 0..20_000 {
        keys.push_str(&format!("user:{{{}}}:profile\n", i % 5000));
    }
    for i in 0..8_000 {
        keys.push_str(&format!("order:{{acme}}:{i}\n"));
    }
    for i in 0..10_000 {
        keys.push_str(&format!("plain:{i}\n"));
    }
    std::fs::write(dir.join("keys.txt"), keys).unwrap();
    std::fs::write(
        dir.join("servers.txt"),
        "10.1.0.1:11211\n10.1.0.2:11211\n10.1.0.3:11211\n10.1.0.4:11211\n",
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_memshard"))
        .args(["plan", "--servers"])
        .arg(dir.join("servers.txt"))
        .args(["--hash-tag", "{}", "--tag-audit", "--key-file"])
        .arg(dir.join("keys.txt"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    println!("{text}");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("38000 keys, 28000 with a tag, 5001 distinct tags"),
        "{text}"
    );
    let warnings: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("WARNING: tag"))
        .collect();
    assert_eq!(warnings.len(), 1, "{text}");
    assert!(
        warnings[0].contains("\"acme\"") && warnings[0].contains("21.1%"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(dir);
}
