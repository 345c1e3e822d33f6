//! `--source-addresses A,B,...`: the local addresses new connections to the server are bound
//! to, one after another (round-robin). One source address reaches one server address and
//! port through at most the kernel's ephemeral ports (about 64,500 with
//! `net.ipv4.ip_local_port_range` widened, 28,232 by default); each more address adds as many.
//! On Linux every address of 127.0.0.0/8 is the loopback, so `127.0.0.2,127.0.0.3` work
//! against a server on 127.0.0.1 with no setup. Pure values, no I/O: the binding is the
//! transports' (`measure::client`).

use std::net::IpAddr;

use super::error::{SourceWhy, ValueError};

/// The most source addresses a run may name: 64 × ~64,500 ports is past any open-file limit.
pub const MAX_SOURCE_ADDRESSES: usize = 64;

/// Parses `--source-addresses`: 1 to [`MAX_SOURCE_ADDRESSES`] distinct IP addresses,
/// comma-separated, all of one family (IPv4 or IPv6), none unspecified (`0.0.0.0`, `::`)
/// or multicast.
pub fn parse(s: &str) -> Result<Vec<IpAddr>, ValueError> {
    let mut out = Vec::new();
    for p in s.split(',').map(str::trim) {
        let ip: IpAddr = (p.parse()).map_err(|_| {
            let why = match s.trim().is_empty() || s.split(',').all(|p| p.trim().is_empty()) {
                true => SourceWhy::Empty,
                false => SourceWhy::NotAnAddress(p.to_string()),
            };
            ValueError::SourceAddresses(s.to_string(), why)
        })?;
        out.push(ip);
    }
    check(&out).map_err(|why| ValueError::SourceAddresses(s.to_string(), why))?;
    Ok(out)
}

/// Checks a list by [`parse`]'s rules (an empty list: no binding, the kernel's choice).
pub fn check(list: &[IpAddr]) -> Result<(), SourceWhy> {
    if list.len() > MAX_SOURCE_ADDRESSES {
        return Err(SourceWhy::TooMany(list.len(), MAX_SOURCE_ADDRESSES));
    }
    for (i, ip) in list.iter().enumerate() {
        if ip.is_unspecified() || ip.is_multicast() {
            return Err(SourceWhy::NotLocal(*ip));
        }
        if list[..i].contains(ip) {
            return Err(SourceWhy::Twice(*ip));
        }
        if list[0].is_ipv4() != ip.is_ipv4() {
            return Err(SourceWhy::MixedFamilies);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_addresses_parse_and_refuse_in_one_line() {
        let two = parse("127.0.0.2, 127.0.0.3").unwrap();
        assert_eq!(two.len(), 2);
        assert_eq!(two[1].to_string(), "127.0.0.3");
        assert_eq!(parse("::1").unwrap().len(), 1);
        let many: Vec<String> = (1..=65).map(|i| format!("127.0.1.{i}")).collect();
        assert!(parse(&many[..64].join(",")).is_ok());
        for (text, why) in [
            ("", "no address"),
            (",", "no address"),
            ("127.0.0.2,", "is not an IP address"),
            ("localhost", "is not an IP address"),
            ("127.0.0.2:80", "is not an IP address"),
            ("0.0.0.0", "not a local address"),
            ("224.0.0.1", "not a local address"),
            ("127.0.0.2,127.0.0.2", "named twice"),
            ("127.0.0.2,::1", "mixes IPv4 and IPv6"),
            (&many.join(","), "at most 64"),
        ] {
            let e = parse(text).unwrap_err().to_string();
            assert!(
                e.contains("--source-addresses") && e.contains(why),
                "{text}: {e}"
            );
            assert!(!e.contains('\n'), "{e}");
        }
        assert!(check(&two).is_ok() && check(&[]).is_ok());
        assert_eq!(check(&[two[0], two[0]]), Err(SourceWhy::Twice(two[0])));
    }
}
