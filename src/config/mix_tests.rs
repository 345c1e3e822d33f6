//! The mix file's rules: what reads, what is refused and how it is named, and the order.

use super::*;

const TWO: &str = r#"{
  "classes": [
    {"name": "chat", "weight": 3, "priority": 0, "tenant": "team-a", "output_len": 20,
     "slo": {"ttft_ms": 200}},
    {"name": "batch", "weight": 1, "priority": 10, "tenant": "team-b"}
  ]
}"#;

fn err(text: &str) -> String {
    Mix::from_json(text, "mix.json").unwrap_err().to_string()
}

#[test]
fn a_mix_file_reads_with_its_defaults() {
    let m = Mix::from_json(TWO, "mix.json").unwrap();
    assert_eq!(m.tenant_header, DEFAULT_TENANT_HEADER);
    assert_eq!(m.classes.len(), 2);
    assert_eq!(m.classes[0].priority, Some(0));
    assert_eq!(m.weight_shares(), vec![0.75, 0.25]);
    assert_eq!(m.classes[0].slo.slos().len(), 1);
    // Saved in the result's config and read back unchanged.
    let saved = serde_json::to_string(&m).unwrap();
    assert_eq!(serde_json::from_str::<Mix>(&saved).unwrap(), m);
}

#[test]
fn the_order_holds_each_class_in_proportion_in_every_prefix() {
    let m = Mix::from_json(TWO, "mix.json").unwrap();
    let order = m.order(8);
    assert_eq!(order, vec![0, 0, 1, 0, 0, 0, 1, 0]);
    for k in 1..=order.len() {
        let firsts = order[..k].iter().filter(|&&c| c == 0).count() as f64;
        assert!((firsts - 0.75 * k as f64).abs() <= 1.0, "{order:?} at {k}");
    }
}

#[test]
fn an_empty_mix_is_refused() {
    let e = err(r#"{"classes": []}"#);
    assert!(
        e.contains("--mix") && e.contains("mix.json") && e.contains("no classes"),
        "{e}"
    );
    let e = err("{}");
    assert!(e.contains("line 1") && e.contains("classes"), "{e}");
}

#[test]
fn an_unknown_key_is_named_with_its_line() {
    let e = err("{\"classes\": [\n {\"name\": \"a\", \"wieght\": 1}\n]}");
    assert!(e.contains("mix.json line 2") && e.contains("wieght"), "{e}");
    let e = err("{\"classes\": [{\"name\": \"a\", \"weight\": 1, \"slo\": {\"itl_ms\": 5}}]}");
    assert!(e.contains("itl_ms"), "{e}");
}

#[test]
fn contradictory_shares_and_weights_are_refused() {
    let e = err(r#"{"classes": [{"name": "a", "share": 0.5}, {"name": "b", "share": 0.2}]}"#);
    assert!(e.contains("sum to 0.7"), "{e}");
    let e = err(r#"{"classes": [{"name": "a", "share": 0.5}, {"name": "b", "weight": 1}]}"#);
    assert!(
        e.contains("class 2 ('b')") && e.contains("not both kinds"),
        "{e}"
    );
    let e = err(r#"{"classes": [{"name": "a", "share": 0.5, "weight": 1}]}"#);
    assert!(e.contains("not both"), "{e}");
    let e = err(r#"{"classes": [{"name": "a"}]}"#);
    assert!(e.contains("\"weight\""), "{e}");
    let e = err(r#"{"classes": [{"name": "a", "weight": 0}]}"#);
    assert!(e.contains("weight"), "{e}");
    let e = err(r#"{"classes": [{"name": "a", "weight": 1}, {"name": "a", "weight": 1}]}"#);
    assert!(e.contains("two classes"), "{e}");
    let ok = r#"{"classes": [{"name": "a", "share": 0.25}, {"name": "b", "share": 0.75}]}"#;
    assert!(Mix::from_json(ok, "m").is_ok());
}

#[test]
fn outside_text_is_bounded_and_checked() {
    let e = err(r#"{"classes": [{"name": "", "weight": 1}]}"#);
    assert!(e.contains("\"name\""), "{e}");
    let e = err(r#"{"classes": [{"name": "a\u001b[31m", "weight": 1}]}"#);
    assert!(
        e.contains("control character") && !e.contains('\u{1b}'),
        "{e}"
    );
    let e = err(r#"{"classes": [{"name": "a", "weight": 1, "tenant": "x\r\nevil: 1"}]}"#);
    assert!(e.contains("\"tenant\"") && !e.contains('\r'), "{e}");
    let e = err(r#"{"tenant_header": "bad header", "classes": [{"name": "a", "weight": 1}]}"#);
    assert!(e.contains("tenant_header"), "{e}");
    let e = err(r#"{"tenant_header": "Host", "classes": [{"name": "a", "weight": 1}]}"#);
    assert!(e.contains("sets itself"), "{e}");
    let e = err(r#"{"tenant_header": "Authorization", "classes": [{"name": "a", "weight": 1}]}"#);
    assert!(e.contains("credentials"), "{e}");
    let e = err(r#"{"classes": [{"name": "a", "weight": 1, "output_len": 0}]}"#);
    assert!(e.contains("output_len"), "{e}");
    let e = err(r#"{"classes": [{"name": "a", "weight": 1, "priority": 99999999999}]}"#);
    assert!(e.contains("line 1"), "{e}");
    let e = err(r#"{"classes": [{"name": "a", "weight": 1, "slo": {"ttft_ms": -1}}]}"#);
    assert!(e.contains("ttft_ms"), "{e}");
    let many: Vec<String> = (0..17)
        .map(|i| format!(r#"{{"name": "c{i}", "weight": 1}}"#))
        .collect();
    let e = err(&format!(r#"{{"classes": [{}]}}"#, many.join(",")));
    assert!(e.contains("more than 16"), "{e}");
}

#[test]
fn a_class_with_no_requests_is_refused() {
    let m = Mix::from_json(
        r#"{"classes": [{"name": "big", "weight": 100}, {"name": "tiny", "weight": 1}]}"#,
        "m",
    )
    .unwrap();
    let w = WorkloadSpec::default();
    let e = m.check_run(10, &w).unwrap_err().to_string();
    assert!(
        e.contains("--mix") && e.contains("'tiny'") && e.contains("--num-prompts"),
        "{e}"
    );
    assert!(m.check_run(101, &w).is_ok());
}
