//! Requests that carry several inputs (`--embedding-batch-size`): the workload's prompts,
//! each of its exact length, taken `k` at a time into one request. The request's `prompt` is
//! its first input and `batch` the rest; its built length is theirs together.

use crate::measure::client::RequestSpec;

/// `specs` in requests of `k` consecutive inputs each (the last may hold fewer), numbered
/// from the first one's id; `k` of 1 leaves them as they are.
pub fn batch(specs: Vec<RequestSpec>, k: u32) -> Vec<RequestSpec> {
    let k = usize::try_from(k.max(1)).unwrap_or(usize::MAX);
    if k == 1 {
        return specs;
    }
    let first_id = specs.first().map_or(0, |s| s.id);
    let mut out = Vec::with_capacity(specs.len().div_ceil(k));
    let mut inputs = specs.into_iter().peekable();
    while let Some(mut request) = inputs.next() {
        request.id = first_id + out.len() as u64;
        for _ in 1..k {
            let Some(next) = inputs.next() else { break };
            request.input_len = request.input_len.zip(next.input_len).map(|(a, b)| a + b);
            request.batch.push(next.prompt);
        }
        out.push(request);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_are_grouped_k_to_a_request_with_their_lengths_summed() {
        let spec = |id: u64, len: u64| RequestSpec {
            id,
            prompt: format!("p{id}"),
            input_len: Some(len),
            ..RequestSpec::default()
        };
        let specs: Vec<_> = (10..17).map(|i| spec(i, i)).collect();
        let b = batch(specs.clone(), 3);
        assert_eq!(b.len(), 3);
        assert_eq!((b[0].id, b[1].id, b[2].id), (10, 11, 12));
        assert_eq!(b[0].prompt, "p10");
        assert_eq!(b[0].batch, ["p11", "p12"]);
        assert_eq!(b[0].input_len, Some(10 + 11 + 12));
        assert_eq!(
            b[2].batch,
            Vec::<String>::new(),
            "the last holds what is left"
        );
        assert_eq!(b[2].input_len, Some(16));
        assert_eq!(batch(specs.clone(), 1), specs);
        assert!(batch(Vec::new(), 4).is_empty());
    }
}
