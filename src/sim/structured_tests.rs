//! Tests of the simulator's structured answers: valid for their schema, pattern or choices,
//! and the hostile ones long and of their shape.

use super::*;

/// Exactly ⌊N·r⌋ of requests 0..N are invalid, alternately not JSON and
/// not of the schema; the pieces of every answer join into its text.
#[test]
fn invalid_answers_are_an_exact_share() {
    let rate = ppm(0.25);
    let bad: Vec<u64> = (0..20).filter(|&n| invalid(n, rate).is_some()).collect();
    assert_eq!(bad, [3, 7, 11, 15, 19]);
    assert_eq!(
        (0..1000)
            .filter(|&n| invalid(n, ppm(0.29)).is_some())
            .count(),
        290
    );
    assert_eq!(
        (0..7).filter(|&n| invalid(n, ppm(1.0)).is_some()).count(),
        7
    );
    let schema = json!({"type": "object", "properties": {
        "a": {"type": "string", "minLength": 3, "maxLength": 3},
        "b": {"type": "integer", "minimum": 1, "maximum": 9},
        "c": {"type": "array", "items": {"type": "number"}, "minItems": 2}
    }});
    let joined = |p: &Pieces| {
        let mut out = Vec::new();
        p.push(&mut out, 0, u32::MAX);
        serde_json::from_slice::<String>(&[b"\"", &out[..], b"\""].concat()).unwrap()
    };
    let good = joined(&Pieces::new(&schema, 1, 0, None, 40));
    let v: Value = serde_json::from_str(&good).unwrap();
    assert_eq!(v["a"].as_str().unwrap().len(), 3);
    assert!((1..=9).contains(&v["b"].as_i64().unwrap()));
    assert_eq!(v["c"].as_array().unwrap().len(), 2);
    let cut = joined(&Pieces::new(&schema, 1, 0, Some(0), 3));
    assert!(serde_json::from_str::<Value>(&cut).is_err());
    let list = joined(&Pieces::new(&schema, 1, 0, Some(1), 3));
    assert!(serde_json::from_str::<Value>(&list).unwrap().is_array());
    let p = Pieces::new(&schema, 1, 0, None, 500);
    assert!(p.0.iter().all(|s| !s.is_empty()) && p.0.len() == 500);
}

/// A guided answer is one of the choices or matches the pattern in full;
/// an invalid one is not; a pattern that does not compile and an empty choice list are
/// refused.
#[test]
fn guided_answers_match_and_invalid_ones_do_not() {
    let so = json!({"regex": "\\w+@\\w+\\.com\\n"});
    let g = guided(Some(&so), None, None).unwrap().unwrap();
    let whole = regex::Regex::new("\\A(?:\\w+@\\w+\\.com\\n)\\z").unwrap();
    for n in 0..50 {
        let good = guided_answer(&g, 7, n, None).unwrap();
        assert!(whole.is_match(&good), "{good:?}");
        let wrong = guided_answer(&g, 7, n, Some(0)).unwrap();
        assert!(!whole.is_match(&wrong), "{wrong:?}");
    }
    let hard = json!({"regex": "(ab|cd){2,3}[x-z]?\\d{4}(?:-[A-F]+)*"});
    let g = guided(Some(&hard), None, None).unwrap().unwrap();
    let whole = regex::Regex::new("\\A(?:(ab|cd){2,3}[x-z]?\\d{4}(?:-[A-F]+)*)\\z").unwrap();
    for n in 0..50 {
        assert!(whole.is_match(&guided_answer(&g, 1, n, None).unwrap()));
    }
    let old = json!(["yes", "no"]);
    let Some(Guided::Choice(c)) = guided(None, None, Some(&old)).unwrap() else {
        panic!("guided_choice is read");
    };
    let g = Guided::Choice(c.clone());
    assert!(c.contains(&guided_answer(&g, 1, 3, None).unwrap()));
    assert!(!c.contains(&guided_answer(&g, 1, 3, Some(1)).unwrap()));
    assert!(guided(Some(&json!({"regex": "(a"})), None, None).is_err());
    assert!(guided(Some(&json!({"choice": []})), None, None).is_err());
    assert!(
        guided(Some(&json!({"grammar": "root ::= \"a\""})), None, None)
            .unwrap()
            .is_none()
    );
    assert!(guided(Some(&Value::Null), None, None).unwrap().is_none());
}

/// A hostile answer is as long as asked: a guided text repeated in its own alphabet, a
/// schema's list filled with its enum's last value, valid JSON either way.
#[test]
fn hostile_answers_are_long_and_keep_their_shape() {
    let t = hostile_text("0110".into(), 1_000);
    assert_eq!(t.len(), 1_000);
    assert!(t.bytes().all(|b| b == b'0' || b == b'1'));
    assert_eq!(hostile_text("abc".into(), 0), "abc");
    let joined = |p: &Pieces| {
        let mut out = Vec::new();
        p.push(&mut out, 0, u32::MAX);
        serde_json::from_slice::<String>(&[b"\"", &out[..], b"\""].concat()).unwrap()
    };
    let values: Vec<Value> = (0..50).map(|i| json!(format!("v{i}"))).collect();
    let list = json!({"type": "array", "items": {"enum": values}});
    let doc: Value = serde_json::from_str(&joined(&hostile_json(&list, 1, 0, 10_000, 7))).unwrap();
    let items = doc.as_array().unwrap();
    assert!(items.len() > 1_000 && items.iter().all(|v| v == "v49"));
    let obj = json!({"type": "object", "properties": {
        "a": {"type": "string"}, "tags": {"type": "array", "items": {"enum": ["x", "y"]}}
    }});
    let doc: Value = serde_json::from_str(&joined(&hostile_json(&obj, 1, 0, 10_000, 7))).unwrap();
    assert!(doc["a"].is_string() && doc["tags"].as_array().unwrap().len() > 2_000);
}
