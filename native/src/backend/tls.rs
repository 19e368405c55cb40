//! TLS settings of a PostgreSQL target, with libpq's names and meanings:
//! `sslmode` (`disable`, `allow`, `prefer` (the default), `require`,
//! `verify-ca`, `verify-full`), `sslrootcert` (a PEM file, or `system`), and
//! the client certificate `sslcert` with its key `sslkey`.
//!
//! tokio-postgres knows only disable/prefer/require and none of the files, so
//! these are taken out of the URL here, and the certificate checks they ask
//! for are made by the rustls verifiers below: none for prefer, none for
//! require unless a root certificate is given or `~/.postgresql/root.crt`
//! exists (then it checks the chain, as libpq does), the chain for verify-ca,
//! the chain and the host name for verify-full.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use percent_encoding::percent_decode_str;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{verify_server_name, WebPkiServerVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{
    CertificateDer, CertificateRevocationListDer, PrivateKeyDer, ServerName, UnixTime,
};
use rustls::server::ParsedCertificate;
use rustls::sign::{CertifiedKey, SigningKey, SingleCertAndKey};
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

/// The TLS keys of a URL, checked for sense but with no file read yet: a
/// target reached only over a Unix socket uses no TLS (as in libpq), so its
/// certificate files are never needed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    pub mode: Mode,
    root: Option<String>,
    cert: Option<String>,
    key: Option<String>,
    crl: Option<String>,
    crl_dir: Option<String>,
    /// A setting wannabet cannot honour, refused when TLS is actually used.
    unsupported: Option<String>,
}

/// Bundles of the system's trusted roots, for `sslrootcert=system`.
const SYSTEM_BUNDLES: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/cert.pem",
];

impl Settings {
    /// Splits the TLS keys off a PostgreSQL URL: returns the URL to give
    /// tokio-postgres (verify-* become `require`, the file keys are removed)
    /// and the settings. Errors never quote the URL (it may hold a password).
    pub fn from_url(url: &str) -> Result<(String, Settings), String> {
        let (base, query) = match url.split_once('?') {
            Some((b, q)) => (b, q),
            None => (url, ""),
        };
        let mut mode: Option<Mode> = None;
        let (mut root, mut cert, mut key) = (None, None, None);
        let (mut crl, mut crl_dir, mut unsupported) = (None, None, None);
        let mut kept: Vec<String> = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            let value = percent_decode_str(value).decode_utf8_lossy().into_owned();
            // libpq: an empty file setting means its default.
            let file = Some(value.clone()).filter(|v| !v.is_empty());
            match name {
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
                }
                "sslrootcert" => root = file,
                "sslcert" => cert = file,
                "sslkey" => key = file,
                "sslcrl" => crl = file,
                "sslcrldir" => crl_dir = file,
                "sslpassword" if !value.is_empty() => {
                    unsupported = Some(
                        "sslpassword is not supported: wannabet reads only unencrypted keys; \
                         decrypt a copy ((umask 077; openssl pkey -in KEY -out client.key)), \
                         name it in sslkey and remove sslpassword"
                            .to_string(),
                    )
                }
                "sslpassword" => {}
                _ => kept.push(pair.to_string()),
            }
        }
        // libpq: without sslmode, sslrootcert=system means verify-full.
        let mode = mode.unwrap_or(if root.as_deref() == Some("system") {
            Mode::VerifyFull
        } else {
            Mode::Prefer
        });
        // The system's roots are only for verify-full, where the host name
        // pins which of them counts.
        if root.as_deref() == Some("system") && mode != Mode::VerifyFull {
            return Err(
                "sslrootcert=system needs sslmode=verify-full (any public CA would do otherwise)"
                    .into(),
            );
        }
        let wire = match mode {
            Mode::Disable => "disable",
            Mode::Prefer => "prefer",
            _ => "require",
        };
        kept.push(format!("sslmode={wire}"));
        let url = format!("{base}?{}", kept.join("&"));
        Ok((
            url,
            Settings {
                mode,
                root,
                cert,
                key,
                crl,
                crl_dir,
                unsupported,
            },
        ))
    }

    /// Reads the files the settings name and builds the TLS configuration.
    pub fn load(&self) -> Result<Tls, String> {
        // libpq: require with a root certificate (given, or the default file)
        // checks the chain like verify-ca.
        let mut mode = self.mode;
        if mode == Mode::Require && (self.root.is_some() || default_file("root.crt").is_some()) {
            mode = Mode::VerifyCa;
        }
        if mode == Mode::Disable {
            return Ok(Tls { mode, config: None });
        }
        if let Some(why) = &self.unsupported {
            return Err(why.clone());
        }
        let identity = client_identity(self.cert.as_deref(), self.key.as_deref())?;
        let config = client_config(mode, self, identity)?;
        Ok(Tls {
            mode,
            config: Some(Arc::new(config)),
        })
    }
}

impl Tls {
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

/// The client counter that names a connection's negotiated TLS, as
/// `tls TLSv1.3 TLS_AES_128_GCM_SHA256` (IANA suite names): the engine
/// statistics count connections per version and suite, so a TLS comparison
/// records what each sample actually ran. Counters are named by static
/// strings; these come from a handful of versions and suites, each leaked once.
pub fn negotiated_counter(conn: &rustls::CommonState) -> Option<&'static str> {
    let version = conn.protocol_version()?.as_str()?.replace('_', ".");
    let suite = conn.negotiated_cipher_suite()?.suite();
    let suite = suite.as_str()?.replacen("TLS13_", "TLS_", 1);
    Some(tls_counter(&version, &suite))
}

/// The counter name of a TLS version and suite (see `negotiated_counter`).
pub fn tls_counter(version: &str, suite: &str) -> &'static str {
    static NAMES: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
    let name = format!("tls {version} {suite}");
    let mut names = NAMES.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(known) = names.iter().find(|n| **n == name) {
        return known;
    }
    let leaked: &'static str = Box::leak(name.into_boxed_str());
    names.push(leaked);
    leaked
}

/// Where libpq looks for one of its default files: `~/.postgresql/NAME`.
fn default_path(name: &str) -> Option<PathBuf> {
    std::env::var_os("HOME").map(|h| Path::new(&h).join(".postgresql").join(name))
}

/// One of libpq's default files, if it exists.
fn default_file(name: &str) -> Option<PathBuf> {
    default_path(name).filter(|p| p.is_file())
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A client certificate chain with its key, checked to be a pair.
type Identity = Arc<CertifiedKey>;

fn client_config(
    mode: Mode,
    settings: &Settings,
    identity: Option<Identity>,
) -> Result<ClientConfig, String> {
    let provider = provider();
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS set-up failed: {e}"))?;
    let chain = match mode {
        Mode::Disable | Mode::Prefer | Mode::Require => None,
        Mode::VerifyCa | Mode::VerifyFull => {
            let (store, pinned) = load_roots(settings.root.as_deref())?;
            // libpq checks revocation along the whole chain and refuses a
            // certificate no list covers (OpenSSL's CRL_CHECK_ALL), as
            // webpki's defaults do; like OpenSSL, an expired list is refused.
            let crls = load_crls(settings.crl.as_deref(), settings.crl_dir.as_deref())?;
            let webpki =
                WebPkiServerVerifier::builder_with_provider(Arc::new(store), provider.clone())
                    .with_crls(crls)
                    .enforce_revocation_expiration()
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
    let builder = builder
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    Ok(match identity {
        None => builder.with_no_client_auth(),
        Some(certified) => {
            builder.with_client_cert_resolver(Arc::new(SingleCertAndKey::from(certified)))
        }
    })
}

/// The client certificate libpq would send: `sslcert` (else
/// `~/.postgresql/postgresql.crt` if it exists) with `sslkey` (else
/// `~/.postgresql/postgresql.key`). Unlike libpq, a certificate named in the
/// URL that does not exist is an error, not a connection without it. As in
/// libpq, a key without a certificate is not used.
fn client_identity(cert: Option<&str>, key: Option<&str>) -> Result<Option<Identity>, String> {
    let cert_path = match (cert, default_file("postgresql.crt")) {
        (Some(c), _) => PathBuf::from(c),
        (None, Some(default)) => default,
        (None, None) => return Ok(None),
    };
    let shown = cert_path.display();
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&cert_path)
        .and_then(|certs| certs.collect::<Result<_, _>>())
        .map_err(|e| {
            format!(
                "sslcert {shown}: {e}; name your client certificate (PEM) in sslcert, or \
                 remove sslcert to log in without one"
            )
        })?;
    if certs.is_empty() {
        return Err(format!(
            "sslcert {shown}: no certificate in it (expected PEM)"
        ));
    }
    let key_path = match key {
        Some(k) => PathBuf::from(k),
        None => default_path("postgresql.key").ok_or_else(|| {
            format!("sslcert {shown} needs its key; add sslkey=/path/to/client.key")
        })?,
    };
    let signing = read_key(&key_path, &shown.to_string())?;
    // Compared here rather than by rustls's `keys_match`, which parses the
    // certificate with webpki and so refuses X.509 v1, yet OpenSSL 3.0's
    // `x509 -req` (PostgreSQL's documented recipe) makes v1 client
    // certificates and libpq sends them.
    if let (Some(public), Some(spki)) = (
        signing.public_key(),
        subject_public_key_info(certs[0].as_ref()),
    ) {
        if public.as_ref() != spki {
            return Err(format!(
                "sslcert {shown} and sslkey {}: the key is not the certificate's; name the \
                 key the certificate was made for",
                key_path.display()
            ));
        }
    }
    Ok(Some(Arc::new(CertifiedKey::new(certs, signing))))
}

/// The private key, refused (as by libpq) if group or others may read it.
fn read_key(path: &Path, cert: &str) -> Result<Arc<dyn SigningKey>, String> {
    use std::os::unix::fs::MetadataExt;
    let shown = path.display();
    let meta = std::fs::metadata(path).map_err(|e| {
        format!(
            "sslkey {shown}: {e}; the client certificate {cert} needs its private key: \
             add sslkey=/path/to/client.key"
        )
    })?;
    if !meta.is_file() {
        return Err(format!("sslkey {shown}: not a regular file"));
    }
    // libpq: u=rw (0600) or less, or u=rw,g=r (0640) or less if owned by root.
    let loose = if meta.uid() == 0 {
        meta.mode() & 0o037
    } else {
        meta.mode() & 0o077
    };
    if loose != 0 {
        return Err(format!(
            "sslkey {shown}: group or others may read it, so libpq and wannabet refuse it; \
             run: chmod 600 {shown}"
        ));
    }
    let pem = std::fs::read(path).map_err(|e| format!("sslkey {shown}: {e}"))?;
    let text = String::from_utf8_lossy(&pem);
    if text.contains("ENCRYPTED PRIVATE KEY") || text.contains("Proc-Type: 4,ENCRYPTED") {
        return Err(format!(
            "sslkey {shown}: the key is encrypted and wannabet cannot ask for its passphrase; \
             decrypt a copy ((umask 077; openssl pkey -in {shown} -out client.key)) and name \
             it in sslkey"
        ));
    }
    let key = PrivateKeyDer::from_pem_slice(&pem)
        .map_err(|e| format!("sslkey {shown}: no private key in it (expected PEM): {e}"))?;
    provider().key_provider.load_private_key(key).map_err(|e| {
        format!(
            "sslkey {shown}: wannabet cannot sign with this key ({e}); RSA, ECDSA P-256 or \
             P-384, and Ed25519 keys work"
        )
    })
}

/// The revocation lists of `sslcrl` (else libpq's `~/.postgresql/root.crl`
/// if it exists) and of the files in `sslcrldir`.
fn load_crls(
    file: Option<&str>,
    dir: Option<&str>,
) -> Result<Vec<CertificateRevocationListDer<'static>>, String> {
    let mut files: Vec<PathBuf> = match file {
        Some(f) => vec![PathBuf::from(f)],
        None => default_file("root.crl").into_iter().collect(),
    };
    if let Some(d) = dir {
        let entries = std::fs::read_dir(d).map_err(|e| format!("sslcrldir {d}: {e}"))?;
        let mut inside: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file())
            .collect();
        inside.sort();
        files.extend(inside);
    }
    let mut crls = Vec::new();
    for path in files {
        let found: Vec<_> = CertificateRevocationListDer::pem_file_iter(&path)
            .and_then(|crls| crls.collect::<Result<_, _>>())
            .map_err(|e| format!("sslcrl {}: {e}", path.display()))?;
        if found.is_empty() && file.is_some_and(|f| Path::new(f) == path) {
            return Err(format!(
                "sslcrl {}: no revocation list in it (expected PEM)",
                path.display()
            ));
        }
        crls.extend(found);
    }
    Ok(crls)
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
        None => default_file("root.crt").ok_or(
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

/// One DER element.
struct Der<'a> {
    tag: u8,
    contents: &'a [u8],
    /// Tag, length and contents.
    whole: &'a [u8],
    /// What follows the element.
    rest: &'a [u8],
}

fn der_item(data: &[u8]) -> Option<Der<'_>> {
    let (&tag, rest) = data.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (first as usize, rest)
    } else {
        let n = (first & 0x7f) as usize;
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n].iter().fold(0usize, |a, &b| (a << 8) | b as usize);
        (len, &rest[n..])
    };
    if rest.len() < len {
        return None;
    }
    Some(Der {
        tag,
        contents: &rest[..len],
        whole: &data[..data.len() - rest.len() + len],
        rest: &rest[len..],
    })
}

/// A certificate's subjectPublicKeyInfo, as DER, read without webpki (which
/// refuses X.509 v1 certificates).
fn subject_public_key_info(der: &[u8]) -> Option<&[u8]> {
    let tbs = der_item(der_item(der)?.contents)?;
    let mut rest = tbs.contents;
    // [0] version (absent in v1), then serial, signature, issuer, validity,
    // subject, and the key.
    if rest.first() == Some(&0xa0) {
        rest = der_item(rest)?.rest;
    }
    for _ in 0..5 {
        rest = der_item(rest)?.rest;
    }
    let spki = der_item(rest)?;
    (spki.tag == 0x30).then_some(spki.whole)
}

/// The hash of RFC 5929's tls-server-end-point: the certificate signature's
/// hash, with MD5 and SHA-1 (and SHA-224) raised to SHA-256. None for
/// signature algorithms that name no such hash.
pub fn end_point_digest(der: &[u8]) -> Option<&'static ring::digest::Algorithm> {
    let tbs = der_item(der_item(der)?.contents)?;
    let algorithm = der_item(tbs.rest)?;
    let oid = der_item(algorithm.contents)?;
    if oid.tag != 0x06 {
        return None;
    }
    let params = oid.rest;
    let oid = oid.contents;
    const RSA: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01];
    const ECDSA: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04];
    use ring::digest::{SHA256, SHA384, SHA512};
    match oid {
        // md5, sha1, sha256, sha224 WithRSAEncryption
        [p @ .., 0x04 | 0x05 | 0x0b | 0x0e] if p == RSA => Some(&SHA256),
        [p @ .., 0x0c] if p == RSA => Some(&SHA384),
        [p @ .., 0x0d] if p == RSA => Some(&SHA512),
        // RSASSA-PSS: the hash is in its parameters (as OpenSSL, and so the
        // server, reads it); absent means SHA-1, raised to SHA-256.
        [p @ .., 0x0a] if p == RSA => pss_digest(params),
        // ecdsa-with-SHA1, and ecdsa-with-SHA224 / 256 / 384 / 512
        [p @ .., 0x01] if p == ECDSA => Some(&SHA256),
        [p @ .., 0x03, 0x01 | 0x02] if p == ECDSA => Some(&SHA256),
        [p @ .., 0x03, 0x03] if p == ECDSA => Some(&SHA384),
        [p @ .., 0x03, 0x04] if p == ECDSA => Some(&SHA512),
        _ => None,
    }
}

/// The hash of RSASSA-PSS-params (RFC 4055): `[0] hashAlgorithm`, default
/// SHA-1; SHA-1 and SHA-224 are raised to SHA-256 as for the other algorithms.
fn pss_digest(params: &[u8]) -> Option<&'static ring::digest::Algorithm> {
    use ring::digest::{SHA256, SHA384, SHA512};
    const SHA2: &[u8] = &[0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02];
    let params = der_item(params)?;
    let first = match der_item(params.contents) {
        Some(item) if item.tag == 0xa0 => item,
        _ => return Some(&SHA256), // hashAlgorithm absent: SHA-1
    };
    let hash = der_item(der_item(first.contents)?.contents)?;
    match hash.contents {
        [0x2b, 0x0e, 0x03, 0x02, 0x1a] => Some(&SHA256), // SHA-1
        [p @ .., 0x01 | 0x04] if p == SHA2 => Some(&SHA256),
        [p @ .., 0x02] if p == SHA2 => Some(&SHA384),
        [p @ .., 0x03] if p == SHA2 => Some(&SHA512),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tls_of(url: &str) -> Result<(String, Tls), String> {
        let (url, settings) = Settings::from_url(url)?;
        Ok((url, settings.load()?))
    }

    /// The error of a URL that must be refused.
    fn refusal(url: &str) -> String {
        match tls_of(url) {
            Ok(_) => panic!("{url} was accepted"),
            Err(e) => e,
        }
    }

    #[test]
    fn tls_keys_are_taken_out_of_the_url() {
        let (url, tls) = tls_of("postgresql://u:p@h/db?application_name=x").unwrap();
        assert_eq!(
            url,
            "postgresql://u:p@h/db?application_name=x&sslmode=prefer"
        );
        assert_eq!(tls.mode, Mode::Prefer);
        let (url, tls) = tls_of("postgresql://h/db?sslmode=disable").unwrap();
        assert_eq!(url, "postgresql://h/db?sslmode=disable");
        assert!(tls.config.is_none());
        let (url, tls) = tls_of("postgresql://h/db?sslmode=require").unwrap();
        assert_eq!(
            (url.as_str(), tls.mode),
            ("postgresql://h/db?sslmode=require", Mode::Require)
        );
    }

    #[test]
    fn bad_tls_settings_are_explained_without_the_url() {
        let e = refusal("postgresql://u:secret@h/db?sslmode=maybe");
        assert!(
            e.contains("unknown sslmode") && !e.contains("secret"),
            "{e}"
        );
        let e = refusal("postgresql://u:secret@h/db?sslcert=/no/such.crt&sslkey=/k");
        assert!(
            e.contains("sslcert /no/such.crt") && !e.contains("secret"),
            "{e}"
        );
        let e = refusal("postgresql://u:secret@h/db?sslpassword=x");
        assert!(
            e.contains("sslpassword is not supported") && !e.contains("secret"),
            "{e}"
        );
        // Not used without TLS, so not refused there (as libpq ignores it).
        assert!(tls_of("postgresql://h/db?sslmode=disable&sslpassword=x").is_ok());
        let e = refusal("postgresql://h/db?sslmode=verify-full&sslrootcert=system&sslcrl=/no.crl");
        assert!(e.contains("sslcrl /no.crl"), "{e}");
        let e = refusal("postgresql://h/db?sslmode=verify-full&sslrootcert=/no/such");
        assert!(e.contains("sslrootcert /no/such"), "{e}");
        // require with a root certificate checks the chain, as in libpq.
        let e = refusal("postgresql://h/db?sslmode=require&sslrootcert=/no/such");
        assert!(e.contains("sslrootcert /no/such"), "{e}");
        let e = refusal("postgresql://h/db?sslmode=require&sslrootcert=system");
        assert!(e.contains("needs sslmode=verify-full"), "{e}");
    }
}
