//! TLS settings of a PostgreSQL target, with libpq's names and meanings:
//! `sslmode` (`disable`, `allow`, `prefer` (the default), `require`,
//! `verify-ca`, `verify-full`) and `sslrootcert` (a PEM file, or `system`).
//!
//! tokio-postgres knows only disable/prefer/require and no `sslrootcert`, so
//! these are taken out of the URL here, and the certificate checks they ask
//! for are made by the rustls verifiers below: none for prefer, none for
//! require unless a root certificate is given or `~/.postgresql/root.crt`
//! exists (then it checks the chain, as libpq does), the chain for verify-ca,
//! the chain and the host name for verify-full.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use percent_encoding::percent_decode_str;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{verify_server_name, WebPkiServerVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tokio_postgres::config::SslMode;

/// What the server's certificate must satisfy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Disable,
    /// Encrypt if the server offers it (libpq's `allow` is treated alike).
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

/// A target's TLS: the mode and, unless disabled, the rustls configuration.
#[derive(Clone)]
pub struct Tls {
    pub mode: Mode,
    pub config: Option<Arc<ClientConfig>>,
}

/// Bundles of the system's trusted roots, for `sslrootcert=system`.
const SYSTEM_BUNDLES: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/cert.pem",
];

impl Tls {
    /// Splits the TLS keys off a PostgreSQL URL: returns the URL to give
    /// tokio-postgres (verify-* become `require`, `sslrootcert` is removed)
    /// and the settings. Errors never quote the URL (it may hold a password).
    pub fn from_url(url: &str) -> Result<(String, Tls), String> {
        let (base, query) = match url.split_once('?') {
            Some((b, q)) => (b, q),
            None => (url, ""),
        };
        let mut mode: Option<Mode> = None;
        let mut root: Option<String> = None;
        let mut kept: Vec<String> = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let value = percent_decode_str(value).decode_utf8_lossy().into_owned();
            match key {
                "sslmode" => {
                    mode = Some(match value.as_str() {
                        "disable" => Mode::Disable,
                        "allow" | "prefer" => Mode::Prefer,
                        "require" => Mode::Require,
                        "verify-ca" => Mode::VerifyCa,
                        "verify-full" => Mode::VerifyFull,
                        other => {
                            return Err(format!(
                                "unknown sslmode {other:?}; use disable, prefer, require, \
                                 verify-ca or verify-full"
                            ))
                        }
                    });
                    continue;
                }
                "sslrootcert" => {
                    root = Some(value);
                    continue;
                }
                "sslcert" | "sslkey" | "sslpassword" | "sslcrl" | "sslcrldir" => {
                    return Err(format!(
                        "{key} is not supported: wannabet authenticates by password, not by \
                         client certificate; remove {key} from the URL"
                    ))
                }
                _ => kept.push(pair.to_string()),
            }
        }
        // libpq: without sslmode, sslrootcert=system means verify-full.
        let mut mode = mode.unwrap_or(if root.as_deref() == Some("system") {
            Mode::VerifyFull
        } else {
            Mode::Prefer
        });
        // libpq: require with a root certificate (given, or the default file)
        // checks the chain like verify-ca; the system's roots are only for
        // verify-full, where the host name pins which of them counts.
        if root.as_deref() == Some("system") && mode != Mode::VerifyFull {
            return Err(
                "sslrootcert=system needs sslmode=verify-full (any public CA would do otherwise)"
                    .into(),
            );
        }
        if mode == Mode::Require && (root.is_some() || default_root().is_some()) {
            mode = Mode::VerifyCa;
        }
        let wire = match mode {
            Mode::Disable => "disable",
            Mode::Prefer => "prefer",
            _ => "require",
        };
        kept.push(format!("sslmode={wire}"));
        let url = format!("{base}?{}", kept.join("&"));
        let config = match mode {
            Mode::Disable => None,
            _ => Some(Arc::new(client_config(mode, root.as_deref())?)),
        };
        Ok((url, Tls { mode, config }))
    }

    /// This target over a Unix socket: libpq never uses TLS there.
    pub fn disabled() -> Tls {
        Tls {
            mode: Mode::Disable,
            config: None,
        }
    }

    pub fn ssl_mode(&self) -> SslMode {
        match self.mode {
            Mode::Disable => SslMode::Disable,
            Mode::Prefer => SslMode::Prefer,
            _ => SslMode::Require,
        }
    }

    /// The name the certificate is checked against: the host as written.
    pub fn server_name(host: &str) -> Result<ServerName<'static>, String> {
        ServerName::try_from(host.to_string())
            .map_err(|_| format!("{host:?} is not a host name TLS can check a certificate for"))
    }
}

/// libpq's default root certificate, `~/.postgresql/root.crt`, if it exists.
fn default_root() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .map(|h| Path::new(&h).join(".postgresql/root.crt"))
        .filter(|p| p.is_file())
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn client_config(mode: Mode, root: Option<&str>) -> Result<ClientConfig, String> {
    let provider = provider();
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS set-up failed: {e}"))?;
    let chain = match mode {
        Mode::Disable | Mode::Prefer | Mode::Require => None,
        Mode::VerifyCa | Mode::VerifyFull => {
            let (store, pinned) = load_roots(root)?;
            let webpki =
                WebPkiServerVerifier::builder_with_provider(Arc::new(store), provider.clone())
                    .build()
                    .map_err(|e| format!("TLS set-up failed: {e}"))?;
            Some(Chain {
                webpki,
                pinned,
                check_name: mode == Mode::VerifyFull,
            })
        }
    };
    let verifier = Arc::new(Verifier { provider, chain });
    Ok(builder
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth())
}

/// The trusted roots of verify-ca/verify-full: `sslrootcert`, else libpq's
/// default `~/.postgresql/root.crt`; `system` reads the OS bundle.
fn load_roots(root: Option<&str>) -> Result<(RootCertStore, Vec<CertificateDer<'static>>), String> {
    let path: PathBuf = match root {
        Some("system") => SYSTEM_BUNDLES
            .iter()
            .map(PathBuf::from)
            .find(|p| p.is_file())
            .ok_or("sslrootcert=system: no system certificate bundle found")?,
        Some(p) => PathBuf::from(p),
        None => default_root().ok_or(
            "verify-ca and verify-full need the server's root certificate: add \
                 sslrootcert=/path/to/root.crt to the URL (or sslrootcert=system)",
        )?,
    };
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&path)
        .map_err(|e| format!("sslrootcert {}: {e}", path.display()))?
        .collect::<Result<_, _>>()
        .map_err(|e| format!("sslrootcert {}: {e}", path.display()))?;
    let mut store = RootCertStore::empty();
    let (added, _) = store.add_parsable_certificates(certs.clone());
    if added == 0 {
        return Err(format!(
            "sslrootcert {}: no certificate in it (expected PEM)",
            path.display()
        ));
    }
    Ok((store, certs))
}

/// The server's certificate as the mode asks. Without `chain` (prefer,
/// require) it is not checked, as by libpq without a root certificate; the
/// handshake signatures are verified in every mode, so the server holds the
/// certificate's key.
#[derive(Debug)]
struct Verifier {
    provider: Arc<CryptoProvider>,
    chain: Option<Chain>,
}

/// verify-ca and verify-full: the chain must lead to a trusted root, and for
/// verify-full the certificate must name the host. A server certificate that
/// is itself one of the roots (a self-signed certificate handed out as
/// `root.crt`, as PostgreSQL's documentation shows) is trusted as such, as
/// OpenSSL does; webpki alone would refuse it as a CA used as an end entity.
#[derive(Debug)]
struct Chain {
    webpki: Arc<WebPkiServerVerifier>,
    pinned: Vec<CertificateDer<'static>>,
    check_name: bool,
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(chain) = &self.chain else {
            return Ok(ServerCertVerified::assertion());
        };
        if chain
            .pinned
            .iter()
            .any(|c| c.as_ref() == end_entity.as_ref())
        {
            if chain.check_name {
                let cert = ParsedCertificate::try_from(end_entity)?;
                verify_server_name(&cert, server_name)?;
            }
            return Ok(ServerCertVerified::assertion());
        }
        match chain
            .webpki
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            // webpki checks the chain before the name: a name error means the
            // chain was good, which is all verify-ca asks.
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if !chain.check_name => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.provider.signature_verification_algorithms;
        verify_tls12_signature(message, cert, dss, algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.provider.signature_verification_algorithms;
        verify_tls13_signature(message, cert, dss, algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_keys_are_taken_out_of_the_url() {
        let (url, tls) = Tls::from_url("postgresql://u:p@h/db?application_name=x").unwrap();
        assert_eq!(
            url,
            "postgresql://u:p@h/db?application_name=x&sslmode=prefer"
        );
        assert_eq!(tls.mode, Mode::Prefer);
        let (url, tls) = Tls::from_url("postgresql://h/db?sslmode=disable").unwrap();
        assert_eq!(url, "postgresql://h/db?sslmode=disable");
        assert!(tls.config.is_none());
        let (url, tls) = Tls::from_url("postgresql://h/db?sslmode=require").unwrap();
        assert_eq!(
            (url.as_str(), tls.mode),
            ("postgresql://h/db?sslmode=require", Mode::Require)
        );
    }

    #[test]
    fn bad_tls_settings_are_explained_without_the_url() {
        let e = Tls::from_url("postgresql://u:secret@h/db?sslmode=maybe")
            .err()
            .unwrap();
        assert!(
            e.contains("unknown sslmode") && !e.contains("secret"),
            "{e}"
        );
        let e = Tls::from_url("postgresql://u:secret@h/db?sslcert=/x")
            .err()
            .unwrap();
        assert!(
            e.contains("sslcert is not supported") && !e.contains("secret"),
            "{e}"
        );
        let e = Tls::from_url("postgresql://h/db?sslmode=verify-full&sslrootcert=/no/such")
            .err()
            .unwrap();
        assert!(e.contains("sslrootcert /no/such"), "{e}");
        // require with a root certificate checks the chain, as in libpq.
        let e = Tls::from_url("postgresql://h/db?sslmode=require&sslrootcert=/no/such")
            .err()
            .unwrap();
        assert!(e.contains("sslrootcert /no/such"), "{e}");
        let e = Tls::from_url("postgresql://h/db?sslmode=require&sslrootcert=system")
            .err()
            .unwrap();
        assert!(e.contains("needs sslmode=verify-full"), "{e}");
    }
}
