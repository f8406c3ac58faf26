//! Which `Host` and `Origin` values the server answers. A DNS-rebinding
//! page reaches 127.0.0.1 under its own name, and every page the user opens
//! can send requests to it: so the Host must name this machine (loopback
//! names, the bind address, or a configured name) and an Origin, when a
//! browser sends one, must be the server's own or a configured one. Every
//! match is exact: no prefix or suffix tests.

use std::net::{IpAddr, SocketAddr};

#[derive(Debug, Clone)]
pub struct HostRules {
    /// The address the server is bound to.
    bind: SocketAddr,
    /// Configured names (lower case); "*" accepts any.
    names: Vec<String>,
    /// Configured origins (lower case, no trailing slash).
    origins: Vec<String>,
}

impl HostRules {
    pub fn new(bind: SocketAddr, names: &[String], origins: &[String]) -> HostRules {
        HostRules {
            bind,
            names: names
                .iter()
                .map(|n| n.trim().to_ascii_lowercase())
                .collect(),
            origins: origins.iter().map(|o| normalize_origin(o)).collect(),
        }
    }

    /// Whether a `Host` header value (`name`, `name:port`, `[v6]:port`)
    /// names this server.
    pub fn host_allowed(&self, value: &str) -> bool {
        let Some(host) = host_of(value) else {
            return false;
        };
        if self.names.iter().any(|n| n == "*" || *n == host) {
            return true;
        }
        if host == "localhost" {
            return true;
        }
        let literal = host.trim_start_matches('[').trim_end_matches(']');
        match literal.parse::<IpAddr>() {
            Ok(IpAddr::V4(ip)) if ip.octets()[0] == 127 => true,
            Ok(IpAddr::V6(ip)) if ip.is_loopback() => true,
            // Bound to every interface: any address of this machine; a
            // rebinding page always uses a name, never a literal.
            Ok(_) if self.bind.ip().is_unspecified() => true,
            Ok(ip) => ip == self.bind.ip(),
            Err(_) => false,
        }
    }

    /// Whether a page of `origin` may call the server, given the request's
    /// `Host`: its own origin, or a configured one. Also says whether it is
    /// a cross origin (which then gets CORS headers).
    pub fn origin_allowed(&self, origin: &str, host_header: &str) -> Option<Cross> {
        let origin = normalize_origin(origin);
        let authority = origin
            .strip_prefix("http://")
            .or_else(|| origin.strip_prefix("https://"))?;
        if authority == host_header.trim().to_ascii_lowercase() && !authority.is_empty() {
            return Some(Cross::No);
        }
        self.origins.contains(&origin).then_some(Cross::Yes)
    }

    /// Whether the server listens on loopback only.
    pub fn loopback_bind(&self) -> bool {
        self.bind.ip().is_loopback()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cross {
    No,
    Yes,
}

fn normalize_origin(o: &str) -> String {
    o.trim().trim_end_matches('/').to_ascii_lowercase()
}

/// The host part of a `Host` header value, lower case: `[::1]` keeps its
/// brackets. `None` for anything malformed.
fn host_of(value: &str) -> Option<String> {
    let v = value.trim().to_ascii_lowercase();
    if v.is_empty() || v.contains(['/', '@', ' ', '\\']) {
        return None;
    }
    let host = if v.starts_with('[') {
        let end = v.find(']')?;
        let (h, rest) = v.split_at(end + 1);
        if !(rest.is_empty() || port_ok(rest.strip_prefix(':')?)) {
            return None;
        }
        h.to_string()
    } else {
        match v.rsplit_once(':') {
            Some((h, port)) if port_ok(port) && !h.contains(':') => h.to_string(),
            Some(_) => return None,
            None => v,
        }
    };
    (!host.is_empty()).then_some(host)
}

fn port_ok(p: &str) -> bool {
    !p.is_empty() && p.parse::<u16>().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(bind: &str) -> HostRules {
        HostRules::new(
            bind.parse().unwrap(),
            &["memory.example.org".into()],
            &["http://localhost:3000".into()],
        )
    }

    #[test]
    fn loopback_names_pass_and_everything_else_is_refused() {
        let r = rules("127.0.0.1:8765");
        for ok in [
            "localhost",
            "localhost:8765",
            "LOCALHOST:1",
            "127.0.0.1",
            "127.0.0.1:8765",
            "127.1.2.3:9",
            "[::1]",
            "[::1]:8765",
            "memory.example.org",
            "memory.example.org:443",
        ] {
            assert!(r.host_allowed(ok), "{ok}");
        }
        for bad in [
            "",
            "evil.example",
            "evil.example:8765",
            "127.0.0.1.evil.example",
            "localhost.evil.example",
            "evilocalhost",
            "localhost:",
            "localhost:99999",
            "128.0.0.1",
            "10.0.0.5:8765",
            "[::2]:80",
            "[::1",
            "::1",
            "a@localhost",
            "localhost/x",
            "127.0.0.1:80:80",
            "sub.memory.example.org",
        ] {
            assert!(!r.host_allowed(bad), "{bad:?} accepted");
        }
    }

    #[test]
    fn a_bind_address_is_allowed_and_every_ip_on_an_unspecified_bind() {
        let r = rules("192.168.1.20:8765");
        assert!(r.host_allowed("192.168.1.20:8765"));
        assert!(!r.host_allowed("192.168.1.21:8765"));
        let any = rules("0.0.0.0:8765");
        assert!(any.host_allowed("10.1.2.3:8765"));
        assert!(!any.host_allowed("rebind.evil.example"));
        assert!(!any.loopback_bind());
        assert!(rules("127.0.0.1:1").loopback_bind());
    }

    #[test]
    fn origins_are_the_servers_own_or_configured() {
        let r = rules("127.0.0.1:8765");
        let h = "127.0.0.1:8765";
        assert_eq!(
            r.origin_allowed("http://127.0.0.1:8765", h),
            Some(Cross::No)
        );
        assert_eq!(
            r.origin_allowed("http://127.0.0.1:8765/", h),
            Some(Cross::No)
        );
        assert_eq!(
            r.origin_allowed("http://localhost:3000", h),
            Some(Cross::Yes)
        );
        for bad in [
            "http://evil.example",
            "null",
            "",
            "http://127.0.0.1:8766",
            "file://",
            "http://127.0.0.1:8765.evil.example",
            "ftp://127.0.0.1:8765",
            "http://localhost:30000",
        ] {
            assert_eq!(r.origin_allowed(bad, h), None, "{bad:?} accepted");
        }
    }
}
