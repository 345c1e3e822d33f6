//! The upload of a request with media over HTTPS (reqwest): the exact simulator
//! behind a TLS front on 127.0.0.1 (a self-signed certificate for 127.0.0.1 in
//! `tests/fixtures/tls_test_*.pem`, made for this test only; `--insecure`). Each request's
//! upload is timed from its body's first piece taken to its last, inside the request's span;
//! the whole body arrives (the media tokens are the simulator's exactly).
//! With `--source-addresses`, the front sees connections from every address given.

use crate::common;

use std::sync::Arc;

use servebench::config::media::{MmBucket, MmLimit, MmSpec};
use servebench::config::{BackendKind, Dataset};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::{self, ServerConfig};
use tokio_rustls::TlsAcceptor;

use common::EXACT_TTFT_MS as TTFT_MS;

/// The addresses a TLS front's connections came from.
type Peers = Arc<std::sync::Mutex<Vec<std::net::IpAddr>>>;

/// A TLS front on 127.0.0.1 (port 0) passing each connection on to `backend`; its port, and
/// the address each connection came from.
async fn tls_front(backend: std::net::SocketAddr) -> (u16, Peers) {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
    let cert = CertificateDer::from_pem_file(format!("{dir}/tls_test_cert.pem")).unwrap();
    let key = PrivateKeyDer::from_pem_file(format!("{dir}/tls_test_key.pem")).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .unwrap();
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let peers = Peers::default();
    let seen = peers.clone();
    tokio::spawn(async move {
        while let Ok((tcp, peer)) = listener.accept().await {
            seen.lock().unwrap().push(peer.ip());
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let Ok(mut plain) = TcpStream::connect(backend).await else {
                    return;
                };
                let _ = plain.set_nodelay(true);
                let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
            });
        }
    });
    (port, peers)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upload_over_https_is_timed_inside_the_request() {
    let server = common::exact_sim().await;
    let backend = server
        .base_url()
        .trim_start_matches("http://")
        .parse()
        .unwrap();
    let (port, _) = tls_front(backend).await;
    let n = 8u64;
    let backend = BackendKind::OpenaiChat;
    let mm = MmSpec {
        base_items: 2,
        items_range_ratio: 0.0,
        limit: MmLimit { image: 2, video: 0 },
        buckets: vec![MmBucket {
            height: 256,
            width: 256,
            num_frames: 1,
            probability: 1.0,
        }],
    };
    let mut run = common::run_config(format!("https://127.0.0.1:{port}"), backend, n, 2, 16, 4);
    run.insecure = true;
    run.workload.dataset = Dataset::RandomMm {
        input_len: 16,
        output_len: Some(4),
        range_ratio: 0.0,
        mm,
    };
    let dir = tempfile::tempdir().unwrap();
    let (result, records) = common::execute(run, dir.path(), "result.json", false).await;
    server.shutdown().await;

    let s = &result.summary;
    assert_eq!((s.completed, s.failed), (n, 0), "{:?}", s.failures_by_kind);
    for r in &records {
        // The whole body arrived: 2 images of 102 tokens each beside the 16 words.
        assert_eq!(r.prompt_tokens, Some(16 + 2 * 102), "request {}", r.id);
        let start = r.upload_start_ns.expect("the upload's start is timed");
        let end = r.upload_end_ns.expect("the upload's end is timed");
        assert!(
            r.sent_ns <= start && start <= end && end <= r.chunk_ns[0],
            "{r:?}"
        );
        let ttft = (r.chunk_ns[0] - r.sent_ns) as f64 / 1e6;
        assert!(ttft >= TTFT_MS - 0.05, "TTFT {ttft} ms before the truth");
    }
    let m = s.media.as_ref().expect("media figures");
    let upload = m.upload_ms.as_ref().expect("upload figures over HTTPS");
    assert_eq!(upload.count, n);
}

/// `--source-addresses` over HTTPS (reqwest, one client per address, taken in turn per
/// request): the server sees connections from both addresses, and every request completes.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_connections_leave_from_every_source_address() {
    let server = common::exact_sim().await;
    let backend = server
        .base_url()
        .trim_start_matches("http://")
        .parse()
        .unwrap();
    let (port, peers) = tls_front(backend).await;
    let url = format!("https://127.0.0.1:{port}");
    let mut run = common::run_config(url, BackendKind::Openai, 8, 4, 8, 4);
    run.insecure = true;
    let sources: Vec<std::net::IpAddr> = vec![[127, 0, 0, 2].into(), [127, 0, 0, 3].into()];
    run.load.source_addresses = sources.clone();
    let dir = tempfile::tempdir().unwrap();
    let (result, _) = common::execute(run, dir.path(), "result.json", false).await;
    server.shutdown().await;
    let s = &result.summary;
    assert_eq!((s.completed, s.failed), (8, 0), "{:?}", s.failures_by_kind);
    let peers = peers.lock().unwrap().clone();
    for ip in sources {
        assert!(peers.contains(&ip), "no connection from {ip}: {peers:?}");
    }
}
