//! The backend table (`config::BackendKind::info`) against each backend's `Api`: where the
//! client states the same fact as a row of the table, the two agree, so a changed API or a
//! new backend cannot let them drift. The facts: which `--structured-output` kinds it asks
//! for (`Api::structured`), which media parts a request may carry (`Api::body`, and a
//! transcription's form, `Api::encode`), whether it streams (`Api::answer`), whether it takes
//! a conversation (a streamed API that sends a dataset's messages), whether each request is a
//! rerank query and its documents (the body's `query`), and whether each is one audio clip
//! (text alone is not sent, one WAV clip is).

use serde_json::{json, Value};

use super::for_backend;
use crate::config::guided::Pattern;
use crate::config::structured::StructuredOutput;
use crate::config::BackendKind;
use crate::measure::client::api::{Answer, Api, BodySpec, Part};

/// One request of prompt `look` with one document (a rerank needs one), `parts` beside it and
/// the dataset's `messages`.
fn spec<'a>(batch: &'a [String], parts: &'a [Part], messages: Option<&'a Value>) -> BodySpec<'a> {
    BodySpec {
        model: "m",
        prompt: "look",
        batch,
        messages,
        parts,
        max_tokens: 4,
        ignore_eos: false,
    }
}

/// Whether the API sends the request: it writes the body and the bytes it sends.
fn sends(api: &dyn Api, spec: &BodySpec) -> bool {
    (api.body(spec)).is_ok_and(|body| api.encode(&body, spec).is_ok())
}

fn wav() -> Part {
    Part::Audio {
        data: "UklGRiQAAABXQVZF".into(),
        format: "wav".into(),
        duration: std::time::Duration::ZERO,
    }
}

#[test]
fn the_table_states_what_each_api_does() {
    let batch = vec!["a document".to_string()];
    let image = Part::Image {
        url: "data:image/png;base64,iVBO".into(),
    };
    let video = Part::Video {
        url: "data:video/jpeg;base64,/9j/,/9j/".into(),
        frames: 2,
    };
    let messages = json!([{"role": "user", "content": "hi"}]);
    for k in BackendKind::ALL {
        let (api, row) = (for_backend(k), k.info());
        let name = row.name;
        let streamed = matches!(api.answer(), Answer::Streamed(_));
        assert_eq!(k.streams(), streamed, "{name}: streams");

        // A request needs its clip where each is one; the rest is asked of the API.
        let clip = [wav()];
        let own: &[Part] = if row.takes_clip { &clip } else { &[] };
        let text_alone = sends(api.as_ref(), &spec(&batch, &[], None));
        let one_clip = sends(api.as_ref(), &spec(&batch, &clip, None));
        assert_eq!(
            row.takes_clip,
            !text_alone && one_clip,
            "{name}: takes_clip"
        );

        let media = row.media;
        for (part, allowed) in [
            (&image, media.images),
            (&video, media.video),
            (&clip[0], media.audio),
        ] {
            let parts = [part.clone()];
            let sent = sends(api.as_ref(), &spec(&batch, &parts, None));
            assert_eq!(sent, allowed, "{name}: media {}", part.kind());
        }

        let talks = streamed && sends(api.as_ref(), &spec(&batch, own, Some(&messages)));
        assert_eq!(row.conversations, talks, "{name}: conversations");

        let body = api.body(&spec(&batch, own, None)).unwrap();
        let query = body.get("query") == Some(&json!("look"));
        assert_eq!(row.takes_query, query, "{name}: takes_query");

        let regex = StructuredOutput::Regex {
            pattern: Pattern::new("[a-z]+", "--structured-output-regex").unwrap(),
            legacy_fields: false,
        };
        let choice = StructuredOutput::Choice {
            choices: vec!["yes".into(), "no".into()],
            legacy_fields: false,
        };
        let grammar = StructuredOutput::Grammar {
            grammar: "root ::= \"a\"".into(),
            legacy_fields: false,
        };
        for s in [
            StructuredOutput::builtin_json(),
            StructuredOutput::builtin_tools(),
            regex,
            choice,
            grammar,
        ] {
            let asked = api.structured(&mut json!({}), &s).is_ok();
            let allowed = s.asked_of(row.structured);
            assert_eq!(asked, allowed, "{name}: --structured-output {}", s.kind());
        }
    }
}
