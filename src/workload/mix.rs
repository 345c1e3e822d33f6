//! A workload mix's requests (`--mix`): each class's requests, built with the
//! class's own lengths, put in the mix's order ([`crate::config::mix::Mix::order`]) and
//! tagged with their class (its number, its `priority`, its tenant header). Nothing here
//! sends or reads a clock.

use crate::config::mix::Mix;
use crate::measure::client::{ClassTag, RequestSpec};

/// The run's requests: `per_class[c]` holds class `c`'s, in the order they are taken;
/// `order` is each request's class. Ids are renumbered by position; a class's `output_len`
/// is what each of its requests asks for. Requests run out of a class only if `per_class`
/// holds fewer than `order` asks of it (then the run is shorter).
pub fn interleave(mix: &Mix, order: &[u32], per_class: Vec<Vec<RequestSpec>>) -> Vec<RequestSpec> {
    let mut queues: Vec<_> = per_class.into_iter().map(Vec::into_iter).collect();
    let mut out = Vec::with_capacity(order.len());
    for &c in order {
        let (Some(queue), Some(class)) = (queues.get_mut(c as usize), mix.classes.get(c as usize))
        else {
            continue;
        };
        let Some(mut spec) = queue.next() else {
            continue;
        };
        spec.id = out.len() as u64;
        if let Some(n) = class.output_len {
            spec.output_len = n;
        }
        spec.class = Some(ClassTag {
            index: c,
            priority: class.priority,
            header: (class.tenant.clone()).map(|t| (mix.tenant_header.clone(), t)),
        });
        out.push(spec);
    }
    out
}

/// How many of `order` are class `c`.
pub fn count(order: &[u32], c: usize) -> u64 {
    order.iter().filter(|&&k| k as usize == c).count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_take_their_class_in_the_mix_order() {
        let mix = Mix::from_json(
            r#"{"tenant_header": "x-t", "classes": [
                {"name": "a", "weight": 1, "priority": 1, "tenant": "ta", "output_len": 7},
                {"name": "b", "weight": 1}]}"#,
            "m",
        )
        .unwrap();
        let order = mix.order(4);
        let spec = |id| RequestSpec {
            id,
            output_len: 3,
            ..RequestSpec::default()
        };
        let per_class = vec![vec![spec(10), spec(11)], vec![spec(20), spec(21)]];
        let out = interleave(&mix, &order, per_class);
        assert_eq!(order, vec![0, 1, 0, 1]);
        let ids: Vec<u64> = out.iter().map(|s| s.id).collect();
        assert_eq!(ids, vec![0, 1, 2, 3]);
        let a = out[0].class.as_ref().unwrap();
        assert_eq!((a.index, a.priority), (0, Some(1)));
        assert_eq!(a.header, Some(("x-t".into(), "ta".into())));
        assert_eq!((out[0].output_len, out[1].output_len), (7, 3));
        assert_eq!(out[1].class.as_ref().unwrap().header, None);
        assert_eq!(count(&order, 1), 2);
    }
}
