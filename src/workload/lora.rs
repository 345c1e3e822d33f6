//! Multi-LoRA traffic (`--lora-modules`): each request's `model` is an adapter drawn by weight
//! from a stream seeded by the run's seed (one draw per request, in request order), unless it
//! names its own (a jsonl line's `model`). A conversation's turns after its first go to the
//! adapter its first went to. Reproducible: the same seed and adapters give the same mix.

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use crate::config::lora::LoraModule;
use crate::measure::client::RequestSpec;

/// The seed of the adapters' stream, beside the run's `seed`.
fn stream_seed(seed: u64) -> u64 {
    seed ^ 0x10BA_AD5E_ED00_0A0A
}

/// Sets each request's adapter: its own where it names one, else drawn from `modules` by
/// weight (nothing when `modules` is empty).
pub fn assign(requests: &mut [RequestSpec], modules: &[LoraModule], seed: u64) {
    if modules.is_empty() {
        return;
    }
    let total: f64 = modules.iter().map(|m| m.weight).sum();
    let mut rng = StdRng::seed_from_u64(stream_seed(seed));
    let mut conversation: Option<String> = None;
    for r in requests {
        if r.turn.is_some_and(|t| t > 0) {
            if r.model.is_none() {
                r.model = conversation.clone();
            }
            continue;
        }
        if r.model.is_none() {
            let mut at = rng.random::<f64>() * total;
            let mut pick = &modules[modules.len() - 1];
            for m in modules {
                if at < m.weight {
                    pick = m;
                    break;
                }
                at -= m.weight;
            }
            r.model = Some(pick.name.clone());
        }
        conversation = r.model.clone();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn module(name: &str, weight: f64) -> LoraModule {
        LoraModule {
            name: name.into(),
            weight,
        }
    }

    /// Adapters are drawn by weight from a seeded stream (the mix near the
    /// weights over many draws, the same for the same seed), a request's own model is kept,
    /// and a conversation stays on one adapter.
    #[test]
    fn adapters_are_drawn_by_weight_from_a_seeded_stream() {
        let modules = [module("a", 1.0), module("b", 3.0)];
        let mut requests = vec![RequestSpec::default(); 4000];
        requests[7].model = Some("own".into());
        assign(&mut requests, &modules, 5);
        let count = |name: &str| {
            (requests.iter())
                .filter(|r| r.model.as_deref() == Some(name))
                .count()
        };
        assert_eq!(count("own"), 1);
        assert_eq!(count("a") + count("b"), 3999);
        // 1:3 of 3,999: a's expected 1,000, its standard deviation 27.
        assert!((850..1150).contains(&count("a")), "{}", count("a"));
        let mut again = vec![RequestSpec::default(); 4000];
        again[7].model = Some("own".into());
        assign(&mut again, &modules, 5);
        assert_eq!(again, requests, "the same seed, the same mix");
        let mut other = vec![RequestSpec::default(); 4000];
        assign(&mut other, &modules, 6);
        assert_ne!(other, requests);

        let turn = |t: u32| RequestSpec {
            turn: Some(t),
            ..RequestSpec::default()
        };
        let mut talk: Vec<_> = (0..30).flat_map(|_| [turn(0), turn(1), turn(2)]).collect();
        assign(&mut talk, &modules, 1);
        for c in talk.chunks(3) {
            assert!(c.iter().all(|r| r.model == c[0].model), "{c:?}");
        }
        let mut none = vec![RequestSpec::default(); 3];
        assign(&mut none, &[], 1);
        assert!(none.iter().all(|r| r.model.is_none()));
    }
}
