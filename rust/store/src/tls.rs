//! TLS of the control store over TCP: what a PE or the launcher trusts, and the rustls
//! configurations made from it (TLS 1.3 only, `ring` only, both ends authenticated).
//!
//! Owns the per-job CA that `shmemrun` makes (rcgen) and the bundle it hands its PEs through a
//! memfd; the self-signed store certificate of a unique id and the verifier that pins it by
//! its SHA-256 fingerprint; the user's certificates, read from CANN's `"key: value;"` TLS info
//! string, with the private key in PEM (plain, or PKCS#8 encrypted with PBES2) and CRLs; and the
//! settings the C entry points make before `shmem_init`. Must never write key material to a
//! file or to the environment, and never accept a legacy OpenSSL-encrypted key
//! (`Proc-Type: 4,ENCRYPTED`, whose key derivation is a single MD5).

use std::net::{IpAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::server::WebPkiClientVerifier;
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, ServerConfig, SignatureScheme};
use rustls_pki_types::pem::{self, PemObject, SectionKind};
use rustls_pki_types::{
    CertificateDer, CertificateRevocationListDer, PrivateKeyDer, PrivatePkcs8KeyDer,
};
use rustls_pki_types::{ServerName, UnixTime};
use subtle::ConstantTimeEq;

/// Why TLS of the store could not be set up: a library (rustls, rcgen, the PEM and PKCS#8
/// readers) or the system failed on something this module did (`what`), or the certificates,
/// keys or settings given are not usable.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// A call failed while doing `what`.
    #[error("{what}: {source}")]
    Failed {
        /// What was being done or read.
        what: String,
        /// The failure, as its library reported it.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// What was given cannot be used (the text says what and how to fix it).
    #[error("{0}")]
    Invalid(String),
}

impl TlsError {
    fn failed(what: impl Into<String>, e: impl std::error::Error + Send + Sync + 'static) -> Self {
        TlsError::Failed {
            what: what.into(),
            source: Box::new(e),
        }
    }
}

impl From<&str> for TlsError {
    fn from(why: &str) -> Self {
        TlsError::Invalid(why.to_string())
    }
}

/// Name every per-job server certificate carries besides the store's IP addresses.
pub const JOB_SERVER_NAME: &str = "shmem-store.invalid";

/// What the ends of a TCP store connection trust.
#[derive(Debug)]
#[non_exhaustive]
pub enum Trust {
    /// `shmemrun`'s throw-away CA: PEs present the job's client certificate and accept only a
    /// store certificate that CA signed.
    JobCa(TlsIdentity),
    /// The user's certificates (`shmem_set_conf_store_tls`): every PE presents them, and the
    /// store (PE 0) presents them too; peers must chain to the user's CA files.
    User(TlsIdentity),
    /// No TLS (`SHMEM_TLS_DISABLE=1`, or `shmem_set_conf_store_tls(false, ...)`): plain TCP.
    Off,
    /// A unique id's store (`shmem_get_uniqueid`): PE 0 presents the self-signed certificate
    /// the id pins and asks for no client certificate; PEs accept only a store certificate
    /// whose SHA-256 is the id's fingerprint, and prove membership with the id's secret in
    /// HELLO.
    Pinned(Pinned),
}

impl Trust {
    /// The identity, unless TLS is off or the store's certificate is pinned.
    pub fn identity(&self) -> Option<&TlsIdentity> {
        match self {
            Trust::JobCa(id) | Trust::User(id) => Some(id),
            Trust::Off | Trust::Pinned(_) => None,
        }
    }

    /// Whether the store's connections run TLS.
    pub fn uses_tls(&self) -> bool {
        match self {
            Trust::JobCa(_) | Trust::User(_) => true,
            Trust::Pinned(p) => p.tls,
            Trust::Off => false,
        }
    }

    /// The secret every PE's HELLO must carry, when the job has one (a unique id's).
    pub fn secret(&self) -> Option<&[u8; 16]> {
        match self {
            Trust::Pinned(p) => Some(&p.secret),
            _ => None,
        }
    }

    /// A PE's configuration; `None`: plain TCP.
    pub fn client_config(&self) -> Result<Option<Arc<ClientConfig>>, TlsError> {
        match self {
            Trust::JobCa(id) | Trust::User(id) => id.client_config().map(Some),
            Trust::Pinned(p) if p.tls => pinned_client_config(p.fingerprint).map(Some),
            Trust::Pinned(_) | Trust::Off => Ok(None),
        }
    }

    /// The store's configuration; `None`: plain TCP. A pinned store needs the certificate and
    /// key that only the process which made the unique id holds.
    pub fn server_config(&self) -> Result<Option<Arc<ServerConfig>>, TlsError> {
        match self {
            Trust::JobCa(id) | Trust::User(id) => id.server_config().map(Some),
            Trust::Pinned(p) if p.tls => match &p.server {
                Some(server) => server.config().map(Some),
                None => Err("this process holds no certificate of the unique id".into()),
            },
            Trust::Pinned(_) | Trust::Off => Ok(None),
        }
    }

    /// The listener the store serves on when it was bound before start-up (a unique id's, by
    /// `shmem_get_uniqueid`): a new handle on it.
    pub fn bound_listener(&self) -> Option<std::io::Result<TcpListener>> {
        match self {
            Trust::Pinned(Pinned {
                server: Some(server),
                ..
            }) => Some(server.listener.try_clone()),
            _ => None,
        }
    }
}

/// What a unique id lets a PE trust.
#[derive(Debug)]
pub struct Pinned {
    /// SHA-256 of the store's certificate (DER).
    pub fingerprint: [u8; 32],
    /// The id's secret: a HELLO without it is refused.
    pub secret: [u8; 16],
    /// Whether connections run TLS; `false` by choice (`SHMEM_TLS_DISABLE=1`,
    /// `shmem_set_conf_store_tls(false, ...)`): plain TCP, the secret is still checked but
    /// travels in the clear.
    pub tls: bool,
    /// PE 0 only: the store's listener, certificate and key, from `shmem_get_uniqueid`.
    pub server: Option<PinnedServer>,
}

/// What the process that made a unique id keeps for serving its store.
pub struct PinnedServer {
    /// Bound (and listening) by `shmem_get_uniqueid`; close-on-exec.
    pub listener: TcpListener,
    /// The self-signed store certificate.
    pub cert: CertificateDer<'static>,
    /// Its private key.
    pub key: PrivateKeyDer<'static>,
}

impl std::fmt::Debug for PinnedServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PinnedServer")
            .field("listener", &self.listener)
            .finish_non_exhaustive()
    }
}

impl PinnedServer {
    /// A copy of this entry: a new handle on the same listener, the same certificate and key.
    pub fn try_clone(&self) -> std::io::Result<PinnedServer> {
        Ok(PinnedServer {
            listener: self.listener.try_clone()?,
            cert: self.cert.clone(),
            key: self.key.clone_key(),
        })
    }

    /// The store's configuration: TLS 1.3, the self-signed certificate, no client certificate
    /// asked for (PEs prove membership with the secret, inside TLS).
    pub fn config(&self) -> Result<Arc<ServerConfig>, TlsError> {
        let config = ServerConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(|e| TlsError::failed("TLS 1.3 configuration", e))?
            .with_no_client_auth()
            .with_single_cert(vec![self.cert.clone()], self.key.clone_key())
            .map_err(|e| TlsError::failed("the unique id's store certificate or key refused", e))?;
        Ok(Arc::new(config))
    }
}

/// SHA-256 of a certificate's DER bytes: what a unique id pins.
pub fn fingerprint(cert: &CertificateDer<'_>) -> [u8; 32] {
    let digest = ring::digest::digest(&ring::digest::SHA256, cert.as_ref());
    let mut out = [0u8; 32];
    out.copy_from_slice(digest.as_ref());
    out
}

/// Makes a unique id's store certificate: self-signed, ECDSA P-256, naming `ips`. Nothing is
/// written anywhere.
pub fn pinned_certificate(
    ips: &[IpAddr],
    validity: Validity,
) -> Result<(CertificateDer<'static>, PrivateKeyDer<'static>), TlsError> {
    use rcgen::{CertificateParams, DnType, ExtendedKeyUsagePurpose, KeyPair, SanType};
    let err =
        |what: &str, e: rcgen::Error| TlsError::failed(format!("making the unique id's {what}"), e);
    let key = KeyPair::generate().map_err(|e| err("store key", e))?;
    let mut params = CertificateParams::default();
    params
        .distinguished_name
        .push(DnType::CommonName, "shmem store (unique id)");
    params.not_before = validity.not_before;
    params.not_after = validity.not_after;
    params.subject_alt_names = ips.iter().map(|ip| SanType::IpAddress(*ip)).collect();
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let cert = params
        .self_signed(&key)
        .map_err(|e| err("store certificate", e))?;
    Ok((
        cert.der().clone(),
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
    ))
}

/// A PE's configuration for a pinned store: TLS 1.3, no client certificate, and the store's
/// certificate must have SHA-256 `fingerprint`.
pub fn pinned_client_config(fingerprint: [u8; 32]) -> Result<Arc<ClientConfig>, TlsError> {
    let provider = provider();
    let verifier = Arc::new(PinnedVerifier {
        fingerprint,
        provider: Arc::clone(&provider),
    });
    let config = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| TlsError::failed("TLS 1.3 configuration", e))?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// Accepts exactly one store certificate, by fingerprint: no CA, no name, no validity dates
/// (the id was made for this job and is as fresh as the job). The handshake's signature is
/// still checked with the provider's algorithms, so only the holder of the pinned certificate's
/// key can pass.
#[derive(Debug)]
struct PinnedVerifier {
    fingerprint: [u8; 32],
    provider: Arc<CryptoProvider>,
}

/// A store certificate that is not the one a unique id pins. Debug says the same as Display:
/// rustls shows this error through Debug.
struct NotPinned;

impl std::fmt::Debug for NotPinned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

impl std::fmt::Display for NotPinned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(
            "the store's certificate is not the one the unique id pins (its SHA-256 \
             fingerprint differs)",
        )
    }
}

impl std::error::Error for NotPinned {}

impl ServerCertVerifier for PinnedVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if bool::from(fingerprint(end_entity).ct_eq(&self.fingerprint)) {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::Other(rustls::OtherError(Arc::new(NotPinned))),
            ))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// Certificates and key of one end, with what it trusts of the other end.
#[derive(Debug)]
pub struct TlsIdentity {
    /// CA certificates the peer's certificate must chain to.
    pub roots: Vec<CertificateDer<'static>>,
    /// This end's certificate, then any intermediates.
    pub chain: Vec<CertificateDer<'static>>,
    /// This end's private key.
    pub key: PrivateKeyDer<'static>,
    /// Revocation lists honoured when checking the peer.
    pub crls: Vec<CertificateRevocationListDer<'static>>,
}

impl Clone for TlsIdentity {
    fn clone(&self) -> Self {
        TlsIdentity {
            roots: self.roots.clone(),
            chain: self.chain.clone(),
            key: self.key.clone_key(),
            crls: self.crls.clone(),
        }
    }
}

/// The one crypto backend: ring.
pub(crate) fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

impl TlsIdentity {
    fn root_store(&self) -> Result<Arc<RootCertStore>, TlsError> {
        let mut roots = RootCertStore::empty();
        for cert in &self.roots {
            roots
                .add(cert.clone())
                .map_err(|e| TlsError::failed("CA certificate refused", e))?;
        }
        if roots.is_empty() {
            return Err("no CA certificate to check the peer against".into());
        }
        Ok(Arc::new(roots))
    }

    /// The store's configuration: TLS 1.3, this identity, clients must present a certificate
    /// that chains to the roots (and is not revoked).
    pub fn server_config(&self) -> Result<Arc<ServerConfig>, TlsError> {
        let verifier = WebPkiClientVerifier::builder_with_provider(self.root_store()?, provider())
            .with_crls(self.crls.clone())
            .only_check_end_entity_revocation()
            .allow_unknown_revocation_status()
            .build()
            .map_err(|e| TlsError::failed("client certificate verifier", e))?;
        let config = ServerConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(|e| TlsError::failed("TLS 1.3 configuration", e))?
            .with_client_cert_verifier(verifier)
            .with_single_cert(self.chain.clone(), self.key.clone_key())
            .map_err(|e| TlsError::failed("store certificate or key refused", e))?;
        Ok(Arc::new(config))
    }

    /// A PE's configuration: TLS 1.3, this identity as client certificate, the store's
    /// certificate must chain to the roots (and name the address dialled).
    pub fn client_config(&self) -> Result<Arc<ClientConfig>, TlsError> {
        let verifier = WebPkiServerVerifier::builder_with_provider(self.root_store()?, provider())
            .with_crls(self.crls.clone())
            .only_check_end_entity_revocation()
            .allow_unknown_revocation_status()
            .build()
            .map_err(|e| TlsError::failed("store certificate verifier", e))?;
        let config = ClientConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(|e| TlsError::failed("TLS 1.3 configuration", e))?
            .with_webpki_verifier(verifier)
            .with_client_auth_cert(self.chain.clone(), self.key.clone_key())
            .map_err(|e| TlsError::failed("client certificate or key refused", e))?;
        Ok(Arc::new(config))
    }
}

/// What `shmemrun` makes for one job.
pub struct JobCredentials {
    /// The store's identity (server certificate for `ips` and [`JOB_SERVER_NAME`]).
    pub server: TlsIdentity,
    /// CA certificate, client certificate and client key, PEM, in that order: what every PE
    /// gets (see [`identity_from_bundle`]).
    pub client_bundle: String,
}

impl std::fmt::Debug for JobCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JobCredentials")
    }
}

/// Validity of generated certificates.
#[derive(Debug, Clone, Copy)]
pub struct Validity {
    /// First valid moment.
    pub not_before: time::OffsetDateTime,
    /// Last valid moment.
    pub not_after: time::OffsetDateTime,
}

impl Validity {
    /// From an hour ago (clock skew between the launcher and its PEs) to 30 days ahead.
    pub fn for_a_job() -> Validity {
        let now = time::OffsetDateTime::now_utc();
        Validity {
            not_before: now - time::Duration::hours(1),
            not_after: now + time::Duration::days(30),
        }
    }
}

/// Makes a throw-away CA, a store certificate for `ips` and one client certificate for all PEs
/// (ECDSA P-256). Nothing is written anywhere.
pub fn job_credentials(ips: &[IpAddr], validity: Validity) -> Result<JobCredentials, TlsError> {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
        KeyUsagePurpose, SanType,
    };
    let err = |what: &str, e: rcgen::Error| TlsError::failed(format!("making the job's {what}"), e);
    let params = |cn: &str| {
        let mut p = CertificateParams::default();
        p.distinguished_name.push(DnType::CommonName, cn);
        p.not_before = validity.not_before;
        p.not_after = validity.not_after;
        p
    };

    let ca_key = KeyPair::generate().map_err(|e| err("CA key", e))?;
    let mut ca_params = params("shmem job CA");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca = ca_params
        .self_signed(&ca_key)
        .map_err(|e| err("CA certificate", e))?;

    let server_key = KeyPair::generate().map_err(|e| err("store key", e))?;
    let mut server_params = params("shmem store");
    server_params.subject_alt_names = ips.iter().map(|ip| SanType::IpAddress(*ip)).collect();
    server_params.subject_alt_names.push(SanType::DnsName(
        JOB_SERVER_NAME
            .try_into()
            .map_err(|e| err("store name", e))?,
    ));
    server_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let server = server_params
        .signed_by(&server_key, &ca, &ca_key)
        .map_err(|e| err("store certificate", e))?;

    let client_key = KeyPair::generate().map_err(|e| err("client key", e))?;
    let mut client_params = params("shmem PE");
    client_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let client = client_params
        .signed_by(&client_key, &ca, &ca_key)
        .map_err(|e| err("client certificate", e))?;

    let pkcs8 = |k: &KeyPair| PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(k.serialize_der()));
    Ok(JobCredentials {
        server: TlsIdentity {
            roots: vec![ca.der().clone()],
            chain: vec![server.der().clone()],
            key: pkcs8(&server_key),
            crls: Vec::new(),
        },
        client_bundle: format!("{}{}{}", ca.pem(), client.pem(), client_key.serialize_pem()),
    })
}

/// Reads the bundle of [`JobCredentials::client_bundle`]: the first certificate is the CA,
/// the second the PE's own, then its key.
pub fn identity_from_bundle(bundle: &[u8]) -> Result<TlsIdentity, TlsError> {
    let certs = certificates(bundle, "the job's TLS bundle")?;
    let [ca, own] = <[_; 2]>::try_from(certs).map_err(|c| {
        TlsError::Invalid(format!(
            "the job's TLS bundle holds {} certificates, not 2",
            c.len()
        ))
    })?;
    Ok(TlsIdentity {
        roots: vec![ca],
        chain: vec![own],
        key: decode_private_key(bundle, None)?,
        crls: Vec::new(),
    })
}

fn certificates(pem: &[u8], what: &str) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::failed(what, e))
}

/// Decodes a PEM private key: PKCS#8 (`PRIVATE KEY`), PKCS#8 encrypted with PBES2
/// (`ENCRYPTED PRIVATE KEY`, needs `password`), SEC1 (`EC PRIVATE KEY`) or PKCS#1
/// (`RSA PRIVATE KEY`). A legacy OpenSSL-encrypted key is refused.
pub fn decode_private_key(
    pem_bytes: &[u8],
    password: Option<&[u8]>,
) -> Result<PrivateKeyDer<'static>, TlsError> {
    let text = String::from_utf8_lossy(pem_bytes);
    if text.contains("Proc-Type: 4,ENCRYPTED") {
        return Err(
            "the private key uses legacy OpenSSL encryption (Proc-Type: 4,ENCRYPTED), \
                    which is refused: convert it to encrypted PKCS#8 with \
                    `openssl pkcs8 -topk8 -v2 aes-256-cbc -in old.key -out new.key`"
                .into(),
        );
    }
    if let Some(start) = text.find("-----BEGIN ENCRYPTED PRIVATE KEY-----") {
        let Some(password) = password.filter(|p| !p.is_empty()) else {
            return Err(
                "the private key is encrypted (ENCRYPTED PRIVATE KEY) but no password \
                        was given (tlsPkPwd, or the password of \
                        shmem_set_config_store_tls_key)"
                    .into(),
            );
        };
        let end_marker = "-----END ENCRYPTED PRIVATE KEY-----";
        let Some(end) = text[start..].find(end_marker) else {
            return Err("the encrypted private key has no END line".into());
        };
        let block = &text[start..start + end + end_marker.len()];
        let (_, doc) = pkcs8::Document::from_pem(block)
            .map_err(|e| TlsError::failed("the encrypted private key is not valid PEM", e))?;
        let info = pkcs8::EncryptedPrivateKeyInfo::try_from(doc.as_bytes())
            .map_err(|e| TlsError::failed("the encrypted private key is not PKCS#8", e))?;
        let plain = info.decrypt(password).map_err(|e| {
            TlsError::Invalid(format!(
                "cannot decrypt the private key ({e}): wrong password, or an encryption other \
                 than PBES2 with PBKDF2 or scrypt and AES-CBC"
            ))
        })?;
        return Ok(PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
            plain.as_bytes().to_vec(),
        )));
    }
    for section in pem::SliceIter::<(SectionKind, Vec<u8>)>::new(pem_bytes) {
        let (kind, der) =
            section.map_err(|e| TlsError::failed("the private key is not valid PEM", e))?;
        let key = match kind {
            SectionKind::PrivateKey => PrivateKeyDer::Pkcs8(der.into()),
            SectionKind::EcPrivateKey => PrivateKeyDer::Sec1(der.into()),
            SectionKind::RsaPrivateKey => PrivateKeyDer::Pkcs1(der.into()),
            _ => continue,
        };
        return Ok(key);
    }
    Err(
        "no private key found (expected a PEM PRIVATE KEY, ENCRYPTED PRIVATE KEY, \
         EC PRIVATE KEY or RSA PRIVATE KEY block)"
            .into(),
    )
}

/// CANN's TLS info string, parsed: `"tlsCaPath: dir/; tlsCaFile: a.pem,b.pem; tlsCert: c.pem;
/// tlsPk: k.pem; tlsPkPwd: pw.txt; tlsCrlPath: dir/; tlsCrlFile: x.pem,y.pem;"`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsInfo {
    /// CA files (tlsCaFile under tlsCaPath).
    pub ca_files: Vec<PathBuf>,
    /// This end's certificate chain (tlsCert).
    pub cert: Option<PathBuf>,
    /// This end's private key (tlsPk).
    pub key: Option<PathBuf>,
    /// File holding the key's password (tlsPkPwd).
    pub key_password: Option<PathBuf>,
    /// CRL files (tlsCrlFile under tlsCrlPath).
    pub crl_files: Vec<PathBuf>,
}

/// Parses a TLS info string. Keys are case-sensitive as CANN spells them; unknown keys are
/// accepted and ignored (logged at debug level). A file list without its directory key is
/// taken relative to the working directory; a directory without a file list means every
/// regular file in it.
pub fn parse_tls_info(info: &str) -> Result<TlsInfo, TlsError> {
    let mut ca_path = None;
    let mut ca_files = None;
    let mut crl_path = None;
    let mut crl_files = None;
    let mut out = TlsInfo::default();
    for item in info.split(';').map(str::trim).filter(|i| !i.is_empty()) {
        let Some((key, value)) = item.split_once(':') else {
            return Err(TlsError::Invalid(format!("'{item}' is not 'key: value'")));
        };
        let (key, value) = (key.trim(), value.trim());
        if value.is_empty() {
            return Err(TlsError::Invalid(format!("{key} has an empty value")));
        }
        let list = || -> Vec<String> {
            value
                .split(',')
                .map(str::trim)
                .filter(|f| !f.is_empty())
                .map(String::from)
                .collect()
        };
        match key {
            "tlsCaPath" => ca_path = Some(PathBuf::from(value)),
            "tlsCaFile" => ca_files = Some(list()),
            "tlsCert" => out.cert = Some(value.into()),
            "tlsPk" => out.key = Some(value.into()),
            "tlsPkPwd" => out.key_password = Some(value.into()),
            "tlsCrlPath" => crl_path = Some(PathBuf::from(value)),
            "tlsCrlFile" => crl_files = Some(list()),
            other => tracing::debug!("TLS info: ignoring unknown key '{other}'"),
        }
    }
    out.ca_files = join_files(ca_path, ca_files, "tlsCaPath")?;
    out.crl_files = join_files(crl_path, crl_files, "tlsCrlPath")?;
    Ok(out)
}

fn join_files(
    dir: Option<PathBuf>,
    files: Option<Vec<String>>,
    dir_key: &str,
) -> Result<Vec<PathBuf>, TlsError> {
    Ok(match (dir, files) {
        (dir, Some(files)) => files
            .iter()
            .map(|f| dir.as_deref().map_or_else(|| f.into(), |d| d.join(f)))
            .collect(),
        (Some(dir), None) if dir.is_dir() => {
            let mut all: Vec<PathBuf> = std::fs::read_dir(&dir)
                .map_err(|e| TlsError::failed(format!("{dir_key} {}", dir.display()), e))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_file())
                .collect();
            all.sort();
            all
        }
        (Some(file), None) => vec![file],
        (None, None) => Vec::new(),
    })
}

fn read(path: &Path, what: &str) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|e| TlsError::failed(format!("{what} {}", path.display()), e))
}

/// Builds the user's identity from the TLS info and, if given, the key and password handed
/// over by `shmem_set_config_store_tls_key` (which take the place of tlsPk and tlsPkPwd).
pub fn load_user_identity(
    info: &TlsInfo,
    key_pem: Option<&[u8]>,
    password: Option<&[u8]>,
) -> Result<TlsIdentity, TlsError> {
    let mut roots = Vec::new();
    for f in &info.ca_files {
        let certs = certificates(&read(f, "CA file")?, &format!("CA file {}", f.display()))?;
        if certs.is_empty() {
            return Err(TlsError::Invalid(format!(
                "CA file {}: no certificate in it",
                f.display()
            )));
        }
        roots.extend(certs);
    }
    if roots.is_empty() {
        return Err("no CA certificate given (tlsCaFile / tlsCaPath)".into());
    }
    let cert = info.cert.as_ref().ok_or("no certificate given (tlsCert)")?;
    let chain = certificates(&read(cert, "certificate")?, &cert.display().to_string())?;
    if chain.is_empty() {
        return Err(TlsError::Invalid(format!(
            "tlsCert {}: no certificate in it",
            cert.display()
        )));
    }
    let file_password;
    let password = match (password, &info.key_password) {
        (Some(p), _) => Some(p),
        (None, Some(f)) => {
            let mut p = read(f, "key password file")?;
            while p.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
                p.pop();
            }
            file_password = p;
            Some(&file_password[..])
        }
        (None, None) => None,
    };
    let key_file;
    let key_pem = match (key_pem, &info.key) {
        (Some(k), _) => k,
        (None, Some(f)) => {
            key_file = read(f, "private key")?;
            &key_file[..]
        }
        (None, None) => {
            return Err("no private key given (tlsPk, or shmem_set_config_store_tls_key)".into())
        }
    };
    let key = decode_private_key(key_pem, password)?;
    let mut crls = Vec::new();
    for f in &info.crl_files {
        let bytes = read(f, "CRL file")?;
        let list = CertificateRevocationListDer::pem_slice_iter(&bytes)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| TlsError::failed(format!("CRL file {}", f.display()), e))?;
        if list.is_empty() {
            return Err(TlsError::Invalid(format!(
                "CRL file {}: no CRL in it",
                f.display()
            )));
        }
        crls.extend(list);
    }
    Ok(TlsIdentity {
        roots,
        chain,
        key,
        crls,
    })
}

/// TLS settings made by the C entry points before `shmem_init`.
#[derive(Clone, Default)]
pub struct UserSettings {
    /// `Some(false)`: TLS off; `Some(true)`: the user's certificates; `None`: not called.
    pub enabled: Option<bool>,
    /// The parsed TLS info.
    pub info: TlsInfo,
    /// Private key PEM from `shmem_set_config_store_tls_key`.
    pub key_pem: Option<Vec<u8>>,
    /// Its password (already decrypted by the user's handler, if one was given).
    pub key_password: Option<Vec<u8>>,
}

impl std::fmt::Debug for UserSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserSettings")
            .field("enabled", &self.enabled)
            .field("info", &self.info)
            .field("key_pem", &self.key_pem.as_ref().map(|_| "(set)"))
            .finish_non_exhaustive()
    }
}

impl Drop for UserSettings {
    fn drop(&mut self) {
        for secret in [&mut self.key_pem, &mut self.key_password]
            .into_iter()
            .flatten()
        {
            secret.fill(0);
        }
    }
}

static SETTINGS: Mutex<Option<UserSettings>> = Mutex::new(None);

fn settings() -> MutexGuard<'static, Option<UserSettings>> {
    SETTINGS.lock().unwrap_or_else(|e| e.into_inner())
}

/// `shmem_set_conf_store_tls`: turns the store's TLS off, or on with the user's certificates
/// described by `info` (checked now: a bad string is refused here, not at init).
pub fn set_store_tls(enable: bool, info: Option<&str>) -> Result<(), TlsError> {
    let parsed = match (enable, info) {
        (false, _) => TlsInfo::default(),
        (true, None) => return Err("TLS enabled without TLS info".into()),
        (true, Some(info)) => parse_tls_info(info)?,
    };
    let mut s = settings();
    let entry = s.get_or_insert_with(UserSettings::default);
    entry.enabled = Some(enable);
    entry.info = parsed;
    Ok(())
}

/// `shmem_set_config_store_tls_key`: the private key (PEM) and its password, decoded now so
/// that a bad key or password is refused here, not at init.
pub fn set_store_tls_key(key_pem: &[u8], password: Option<&[u8]>) -> Result<(), TlsError> {
    decode_private_key(key_pem, password)?;
    let mut s = settings();
    let entry = s.get_or_insert_with(UserSettings::default);
    entry.key_pem = Some(key_pem.to_vec());
    entry.key_password = password.map(<[u8]>::to_vec);
    Ok(())
}

/// Wipes the key and password the C entry points gave (once init no longer needs them).
pub fn wipe_key_material() {
    if let Some(entry) = settings().as_mut() {
        for secret in [&mut entry.key_pem, &mut entry.key_password] {
            if let Some(bytes) = secret.as_mut() {
                bytes.fill(0);
            }
            *secret = None;
        }
    }
}

/// What the C entry points set, if anything.
pub fn user_settings() -> Option<UserSettings> {
    settings().clone()
}

/// Whether the user turned the store's TLS off, and how: `SHMEM_TLS_DISABLE=1` (`env_off`) or
/// `shmem_set_conf_store_tls(false, ...)`. Warns once per job when so: by the store's host
/// (`warn`), at debug level elsewhere.
pub fn off_by_choice(env_off: bool, store: &crate::addr::StoreAddr, warn: bool) -> bool {
    let api_off = user_settings().and_then(|u| u.enabled) == Some(false);
    if !env_off && !api_off {
        return false;
    }
    let why = if env_off {
        "SHMEM_TLS_DISABLE=1"
    } else {
        "shmem_set_conf_store_tls(false, ...)"
    };
    let message = format!(
        "TLS of the job's store at {store} is off ({why}): any process that can reach that \
         port can read and write the store"
    );
    if warn {
        tracing::warn!("{message}");
    } else {
        tracing::debug!("{message}");
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_info_is_parsed_as_cann_writes_it() {
        let dir = std::env::temp_dir();
        let info = parse_tls_info(
            "  tlsCaPath: /etc/ssl/certs/;  tlsCert: /c/server.crt; tlsPk: /k/server.key;
               tlsPkPwd: /k/pw.txt; tlsCrlPath: /crl/; tlsCrlFile: a.pem, b.pem;
               tlsCaFile: ca1.pem,ca2.pem; packagePath: /etc/lib",
        )
        .unwrap();
        assert_eq!(
            info,
            TlsInfo {
                ca_files: vec![
                    "/etc/ssl/certs/ca1.pem".into(),
                    "/etc/ssl/certs/ca2.pem".into()
                ],
                cert: Some("/c/server.crt".into()),
                key: Some("/k/server.key".into()),
                key_password: Some("/k/pw.txt".into()),
                crl_files: vec!["/crl/a.pem".into(), "/crl/b.pem".into()],
            }
        );
        assert!(parse_tls_info("tlsCert")
            .unwrap_err()
            .to_string()
            .contains("key: value"));
        assert!(parse_tls_info("tlsCert: ;")
            .unwrap_err()
            .to_string()
            .contains("empty"));
        let _ = dir;
    }

    #[test]
    fn legacy_encrypted_keys_are_refused() {
        let legacy = b"-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n\
                       DEK-Info: AES-256-CBC,0123\n\nAAAA\n-----END RSA PRIVATE KEY-----\n";
        let err = decode_private_key(legacy, Some(b"pw"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("legacy OpenSSL encryption"), "{err}");
        assert!(decode_private_key(b"nothing", None)
            .unwrap_err()
            .to_string()
            .contains("no private key"));
    }

    #[test]
    fn job_bundle_round_trips() {
        let creds =
            job_credentials(&["127.0.0.1".parse().unwrap()], Validity::for_a_job()).unwrap();
        let id = identity_from_bundle(creds.client_bundle.as_bytes()).unwrap();
        assert_eq!(id.roots, creds.server.roots);
        id.client_config().unwrap();
        creds.server.server_config().unwrap();
    }
}
