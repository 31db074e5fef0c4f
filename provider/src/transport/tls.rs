//! TLS between nodes: Galera's `socket.ssl_*` options on rustls.
//!
//! What an operator moving from Galera expects, learned from its
//! behaviour on OpenSSL:
//! * both ends present a certificate and verify the other's against
//!   `socket.ssl_ca` (which defaults to `socket.ssl_cert`, so one
//!   self-signed certificate shared by all nodes works); a certificate
//!   listed in that file is trusted as it is, even a CA's own;
//! * host names are not checked: nodes are addressed by IP, and the CA is
//!   the cluster's membership card;
//! * `socket.ssl_cipher` is OpenSSL's cipher list, which restricts TLS 1.2
//!   suites only (TLS 1.3 suites are named apart; see `Ciphers`);
//! * `socket.dynamic` accepts plain peers beside TLS ones (rolling
//!   upgrades): the first byte of a connection tells them apart.
//!
//! A connection is a rustls state machine beside its socket (`Session`):
//! the link's reader feeds it what the socket brings and the writer takes
//! what it produces, each holding its lock only for the (in-memory) TLS
//! step, never across a socket call, so a blocked write never stops reads.

use std::io::{self, IoSlice, Read, Write};
use std::net::{IpAddr, TcpStream};
use std::sync::{Arc, Mutex, MutexGuard};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{ring, CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::{ParsedCertificate, WebPkiClientVerifier};
use rustls::sign::{CertifiedKey, SingleCertAndKey};
use rustls::{
    ClientConfig, ClientConnection, Connection, DigitallySignedStruct, DistinguishedName, RootCertStore, ServerConfig,
    ServerConnection, SignatureScheme, SupportedCipherSuite,
};

/// The first byte of a TLS connection (a handshake record).
pub const RECORD_HANDSHAKE: u8 = 0x16;

/// The options, as given (paths are read at `load` and at each reload).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TlsSettings {
    pub cert: String,
    pub key: String,
    /// Empty: `cert`.
    pub ca: String,
    /// OpenSSL's cipher list syntax; empty: rustls's defaults.
    pub cipher: String,
    /// Accept plain peers too.
    pub dynamic: bool,
    /// The password of an encrypted key, in a file (first line).
    pub password_file: String,
}

/// Loaded keys and certificates, ready for handshakes.
pub struct Tls {
    client: Arc<ClientConfig>,
    server: Arc<ServerConfig>,
    pub settings: TlsSettings,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls").field("settings", &self.settings).finish()
    }
}

impl Tls {
    /// Reads the files and builds both ends' configurations. The error
    /// names the option and the file.
    pub fn load(s: &TlsSettings) -> Result<Tls, String> {
        for (option, path) in [("socket.ssl_cert", &s.cert), ("socket.ssl_key", &s.key)] {
            if path.is_empty() {
                return Err(format!("TLS is on (socket.ssl) but {} is not set", option));
            }
        }
        let certs = read_certs("socket.ssl_cert", &s.cert)?;
        let key = read_key(&s.key, &s.password_file)?;
        let ca_path = if s.ca.is_empty() { &s.cert } else { &s.ca };
        let anchors = read_certs(if s.ca.is_empty() { "socket.ssl_cert (as the CA)" } else { "socket.ssl_ca" }, ca_path)?;
        let mut roots = RootCertStore::empty();
        let (_, unusable) = roots.add_parsable_certificates(anchors.iter().cloned());
        if roots.is_empty() {
            return Err(format!("socket.ssl_ca '{}': no usable CA certificate ({} unusable)", ca_path, unusable));
        }
        let ciphers = Ciphers::parse(&s.cipher)?;
        let provider = Arc::new(CryptoProvider { cipher_suites: ciphers.suites.clone(), ..ring::default_provider() });
        let verifier = Arc::new(PeerVerifier::new(Arc::new(roots), anchors, provider.clone())?);
        let own = Arc::new(SingleCertAndKey::from(certified_key(s, certs, key, &provider)?));
        let (client, server) = configs(provider, &ciphers.versions(), verifier, own)?;
        if !ciphers.ignored.is_empty() {
            crate::log::info!("socket.ssl_cipher: {}", ciphers.describe());
        }
        Ok(Tls { client: Arc::new(client), server: Arc::new(server), settings: s.clone() })
    }

    /// The connecting side's TLS handshake on a blocking socket (with the
    /// handshake's timeouts set).
    pub fn connect(&self, s: &TcpStream, peer: IpAddr) -> Result<Session, Failed> {
        let conn = ClientConnection::new(self.client.clone(), ServerName::IpAddress(peer.into())).map_err(|e| Failed::Refused(e.to_string()))?;
        Session::handshake(Connection::Client(conn), s)
    }

    /// The accepting side's.
    pub fn accept(&self, s: &TcpStream) -> Result<Session, Failed> {
        let conn = ServerConnection::new(self.server.clone()).map_err(|e| Failed::Refused(e.to_string()))?;
        Session::handshake(Connection::Server(conn), s)
    }
}

/// Both ends' configurations: the same suites, verifier and certificate.
/// Every handshake verifies the peer afresh (no resumption, no tickets):
/// a reload takes effect on the next connection, and there is nothing to
/// gain on a LAN.
fn configs(
    provider: Arc<CryptoProvider>,
    versions: &[&'static rustls::SupportedProtocolVersion],
    verifier: Arc<PeerVerifier>,
    own: Arc<SingleCertAndKey>,
) -> Result<(ClientConfig, ServerConfig), String> {
    let mut client = ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(versions)
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(verifier.clone())
        .with_client_cert_resolver(own.clone());
    client.resumption = rustls::client::Resumption::disabled();
    let mut server = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(versions)
        .map_err(|e| e.to_string())?
        .with_client_cert_verifier(verifier)
        .with_cert_resolver(own);
    server.send_tls13_tickets = 0;
    server.session_storage = Arc::new(rustls::server::NoServerSessionStorage {});
    Ok((client, server))
}

/// The node's own certificate and key, checked to belong together. Not
/// through rustls's `with_single_cert`, which refuses a version 1
/// certificate (see `PeerVerifier::check_version_1`): such a pair is taken
/// as it is, and a wrong key shows at the first handshake.
fn certified_key(s: &TlsSettings, certs: Vec<CertificateDer<'static>>, key: PrivateKeyDer<'static>, provider: &CryptoProvider) -> Result<CertifiedKey, String> {
    let signing = provider.key_provider.load_private_key(key).map_err(|e| format!("socket.ssl_key '{}': {}", s.key, e))?;
    let pair = CertifiedKey::new(certs, signing);
    match pair.keys_match() {
        Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch)) => {
            Err(format!("socket.ssl_key '{}' is not the key of socket.ssl_cert '{}'", s.key, s.cert))
        }
        _ => Ok(pair),
    }
}

fn read_certs(option: &str, path: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let pem = std::fs::read(path).map_err(|e| format!("{} '{}': {}", option, path, e))?;
    let certs: Vec<_> = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{} '{}': {:?}", option, path, e))?;
    if certs.is_empty() {
        return Err(format!("{} '{}': no certificate in the file", option, path));
    }
    Ok(certs)
}

fn read_key(path: &str, password_file: &str) -> Result<PrivateKeyDer<'static>, String> {
    let bad = |why: String| format!("socket.ssl_key '{}': {}", path, why);
    let pem = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
    if pem.contains("Proc-Type: 4,ENCRYPTED") {
        return Err(bad("an OpenSSL-encrypted key of the old format; convert it with `openssl pkcs8 -topk8 -in KEY -out NEW`".into()));
    }
    if !pem.contains("BEGIN ENCRYPTED PRIVATE KEY") {
        return PrivateKeyDer::from_pem_slice(pem.as_bytes()).map_err(|e| bad(format!("no private key ({:?})", e)));
    }
    if password_file.is_empty() {
        return Err(bad("the key is encrypted and socket.ssl_password_file is not set".into()));
    }
    let password = std::fs::read_to_string(password_file).map_err(|e| format!("socket.ssl_password_file '{}': {}", password_file, e))?;
    let password = password.lines().next().unwrap_or_default();
    let (_, der) = pkcs8::Document::from_pem(&pem).map_err(|e| bad(e.to_string()))?;
    let info = pkcs8::EncryptedPrivateKeyInfo::try_from(der.as_bytes()).map_err(|e| bad(e.to_string()))?;
    let plain = info.decrypt(password).map_err(|e| bad(format!("cannot decrypt it with the password of socket.ssl_password_file ({})", e)))?;
    Ok(PrivateKeyDer::Pkcs8(plain.as_bytes().to_vec().into()))
}

/// `socket.ssl_cipher` mapped onto rustls's suites. OpenSSL applies a
/// cipher list to TLS 1.2 and older only, so a list naming TLS 1.2 suites
/// leaves TLS 1.3 as it was (Galera's `galera_ssl_cipher` test names
/// `AES256-SHA`, a CBC suite, and still joins over TLS 1.3). Names of
/// suites rustls does not implement (CBC, RSA key exchange, keywords like
/// `HIGH`) are ignored and said once in the log; a TLS 1.3 name restricts
/// TLS 1.3 to the names given.
struct Ciphers {
    suites: Vec<SupportedCipherSuite>,
    tls12: bool,
    ignored: Vec<String>,
}

/// OpenSSL's names for the suites rustls has.
const OPENSSL_NAMES: &[(&str, &str)] = &[
    ("TLS_AES_256_GCM_SHA384", "TLS13_AES_256_GCM_SHA384"),
    ("TLS_AES_128_GCM_SHA256", "TLS13_AES_128_GCM_SHA256"),
    ("TLS_CHACHA20_POLY1305_SHA256", "TLS13_CHACHA20_POLY1305_SHA256"),
    ("ECDHE-ECDSA-AES256-GCM-SHA384", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"),
    ("ECDHE-ECDSA-AES128-GCM-SHA256", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"),
    ("ECDHE-ECDSA-CHACHA20-POLY1305", "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"),
    ("ECDHE-RSA-AES256-GCM-SHA384", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"),
    ("ECDHE-RSA-AES128-GCM-SHA256", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"),
    ("ECDHE-RSA-CHACHA20-POLY1305", "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"),
];

impl Ciphers {
    fn parse(list: &str) -> Result<Ciphers, String> {
        let all = ring::default_provider().cipher_suites;
        let named = |openssl: &str| {
            let rustls_name = OPENSSL_NAMES.iter().find(|(o, _)| o.eq_ignore_ascii_case(openssl))?.1;
            all.iter().find(|s| format!("{:?}", s.suite()) == rustls_name).copied()
        };
        let (mut tls12, mut tls13, mut ignored) = (Vec::new(), Vec::new(), Vec::new());
        for name in list.split([':', ',', ' ']).map(str::trim).filter(|n| !n.is_empty()) {
            match named(name) {
                Some(s) if s.tls13().is_some() => tls13.push(s),
                Some(s) => tls12.push(s),
                None => ignored.push(name.to_string()),
            }
        }
        let is13 = |s: &SupportedCipherSuite| s.tls13().is_some();
        if list.trim().is_empty() {
            return Ok(Ciphers { suites: all, tls12: true, ignored });
        }
        // OpenSSL's rule: the list governs TLS 1.2; TLS 1.3 keeps its own.
        let mut suites = if tls13.is_empty() { all.iter().copied().filter(is13).collect() } else { tls13 };
        let has12 = !tls12.is_empty();
        suites.extend(tls12);
        if suites.is_empty() {
            return Err(format!("socket.ssl_cipher '{}': no cipher suite lockstep supports", list));
        }
        Ok(Ciphers { suites, tls12: has12, ignored })
    }

    fn versions(&self) -> Vec<&'static rustls::SupportedProtocolVersion> {
        let mut v = vec![&rustls::version::TLS13];
        if self.tls12 {
            v.push(&rustls::version::TLS12);
        }
        v
    }

    fn describe(&self) -> String {
        let names: Vec<String> = self.suites.iter().map(|s| format!("{:?}", s.suite())).collect();
        format!(
            "{} not available in lockstep's TLS (rustls has no CBC or RSA key exchange suites), ignored; suites in use: {}{}",
            self.ignored.join(", "),
            names.join(", "),
            if self.tls12 { "" } else { " (TLS 1.3 only)" }
        )
    }
}

/// Verifies a peer's certificate chain against the CA file, for both
/// ends, without names (see the module comment). A certificate that is
/// itself in the CA file is trusted as it is: webpki refuses a CA
/// certificate as an end entity, and Galera's own tests give every node
/// the CA's certificate and key.
#[derive(Debug)]
struct PeerVerifier {
    roots: Arc<RootCertStore>,
    listed: Vec<CertificateDer<'static>>,
    algorithms: WebPkiSupportedAlgorithms,
    clients: Arc<dyn ClientCertVerifier>,
}

impl PeerVerifier {
    fn new(roots: Arc<RootCertStore>, listed: Vec<CertificateDer<'static>>, provider: Arc<CryptoProvider>) -> Result<Self, String> {
        let clients = WebPkiClientVerifier::builder_with_provider(roots.clone(), provider.clone()).build().map_err(|e| e.to_string())?;
        Ok(PeerVerifier { roots, listed, algorithms: provider.signature_verification_algorithms, clients })
    }

    fn is_listed(&self, cert: &CertificateDer<'_>) -> bool {
        self.listed.iter().any(|c| c.as_ref() == cert.as_ref())
    }

    /// The peer's handshake signature, by its certificate's key. webpki
    /// cannot read a version 1 certificate's key: its raw key is used,
    /// with the schemes TLS 1.3 allows (a TLS 1.2 peer signing with
    /// PKCS#1 v1.5 and such a certificate is refused).
    fn check_signature(&self, tls13: bool, m: &[u8], c: &CertificateDer<'_>, d: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, rustls::Error> {
        use x509_parser::prelude::{FromDer, X509Certificate, X509Version};
        match X509Certificate::from_der(c) {
            Ok((_, cert)) if cert.version() == X509Version::V1 => {
                let spki = rustls::pki_types::SubjectPublicKeyInfoDer::from(cert.public_key().raw);
                rustls::crypto::verify_tls13_signature_with_raw_key(m, &spki, d, &self.algorithms)
            }
            _ if tls13 => rustls::crypto::verify_tls13_signature(m, c, d, &self.algorithms),
            _ => rustls::crypto::verify_tls12_signature(m, c, d, &self.algorithms),
        }
    }

    /// Some(verdict) for an X.509 version 1 certificate, which webpki
    /// refuses outright: trusted if a certificate of the CA file signed it
    /// and it is valid now (no chain: version 1 has no extensions to say
    /// what an intermediate may sign). None: a version 3 certificate.
    fn check_version_1(&self, end_entity: &CertificateDer<'_>, now: UnixTime) -> Option<Result<(), rustls::Error>> {
        use rustls::CertificateError;
        use x509_parser::prelude::{ASN1Time, FromDer, X509Certificate, X509Version};
        let invalid = rustls::Error::InvalidCertificate;
        let Ok((_, cert)) = X509Certificate::from_der(end_entity) else { return Some(Err(invalid(CertificateError::BadEncoding))) };
        if cert.version() != X509Version::V1 {
            return None;
        }
        let at = ASN1Time::from_timestamp(now.as_secs() as i64).ok()?;
        if !cert.validity().is_valid_at(at) {
            return Some(Err(invalid(CertificateError::Expired)));
        }
        let signed = self.listed.iter().filter_map(|ca| X509Certificate::from_der(ca).ok()).any(|(_, ca)| {
            ca.subject() == cert.issuer() && cert.verify_signature(Some(ca.public_key())).is_ok()
        });
        Some(if signed { Ok(()) } else { Err(invalid(CertificateError::UnknownIssuer)) })
    }
}

impl ServerCertVerifier for PeerVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _name: &ServerName<'_>,
        _ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if self.is_listed(end_entity) {
            return Ok(ServerCertVerified::assertion());
        }
        if let Some(verdict) = self.check_version_1(end_entity, now) {
            return verdict.map(|_| ServerCertVerified::assertion());
        }
        let cert = ParsedCertificate::try_from(end_entity)?;
        rustls::client::verify_server_cert_signed_by_trust_anchor(&cert, &self.roots, intermediates, now, self.algorithms.all)?;
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(&self, m: &[u8], c: &CertificateDer<'_>, d: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.check_signature(false, m, c, d)
    }

    fn verify_tls13_signature(&self, m: &[u8], c: &CertificateDer<'_>, d: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.check_signature(true, m, c, d)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

impl ClientCertVerifier for PeerVerifier {
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.clients.root_hint_subjects()
    }

    fn verify_client_cert(&self, end_entity: &CertificateDer<'_>, intermediates: &[CertificateDer<'_>], now: UnixTime) -> Result<ClientCertVerified, rustls::Error> {
        if self.is_listed(end_entity) {
            return Ok(ClientCertVerified::assertion());
        }
        if let Some(verdict) = self.check_version_1(end_entity, now) {
            return verdict.map(|_| ClientCertVerified::assertion());
        }
        self.clients.verify_client_cert(end_entity, intermediates, now)
    }

    fn verify_tls12_signature(&self, m: &[u8], c: &CertificateDer<'_>, d: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.check_signature(false, m, c, d)
    }

    fn verify_tls13_signature(&self, m: &[u8], c: &CertificateDer<'_>, d: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.check_signature(true, m, c, d)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// Why a TLS handshake did not complete.
#[derive(Debug)]
pub enum Failed {
    /// TLS said no: a certificate, an alert, a protocol mismatch. The
    /// operator's news: a warning.
    Refused(String),
    /// The connection failed under it (a peer stopping, a timeout).
    Broken(String),
}

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failed::Refused(why) | Failed::Broken(why) => write!(f, "{}", why),
        }
    }
}

/// One TLS connection's state, shared by the link's reader and writer.
pub struct Session {
    conn: Mutex<Connection>,
}

impl Session {
    fn handshake(mut conn: Connection, s: &TcpStream) -> Result<Session, Failed> {
        let mut sock = s;
        while conn.is_handshaking() {
            match conn.complete_io(&mut sock) {
                Ok((0, 0)) if conn.is_handshaking() => return Err(Failed::Broken(PEER_CLOSED.into())),
                // A peer that closes with our hello unread resets.
                Err(e) if matches!(e.kind(), io::ErrorKind::ConnectionReset | io::ErrorKind::UnexpectedEof) => {
                    return Err(Failed::Broken(PEER_CLOSED.into()))
                }
                Ok(_) => {}
                Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
                    return Err(Failed::Broken("no TLS handshake in time".into()))
                }
                // rustls's own errors come as InvalidData.
                Err(e) if e.kind() == io::ErrorKind::InvalidData => return Err(Failed::Refused(e.to_string())),
                Err(e) => return Err(Failed::Broken(e.to_string())),
            }
        }
        Ok(Session { conn: Mutex::new(conn) })
    }

    fn lock(&self) -> MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Encrypts what `plain` it can take (up to rustls's buffer) and
    /// writes the records to the socket, blocking; the writer's `send`.
    /// Returns the plaintext bytes taken. Only one thread writes.
    pub fn send(&self, s: &TcpStream, plain: &[IoSlice<'_>], scratch: &mut Vec<u8>) -> io::Result<usize> {
        scratch.clear();
        let taken = {
            let mut c = self.lock();
            let n = c.writer().write_vectored(plain)?;
            while c.wants_write() {
                c.write_tls(scratch)?;
            }
            n
        };
        super::net::send_all(s, scratch)?;
        Ok(taken)
    }

    /// The plaintext side for the handshake frames (Hello, Welcome):
    /// blocking on the socket, one thread.
    pub fn stream<'a>(&'a self, s: &'a TcpStream) -> HandshakeStream<'a> {
        HandshakeStream { session: self, sock: s }
    }

    /// The link reader's side: reads records from the socket outside the
    /// lock, decrypts under it.
    pub fn reader(self: Arc<Self>, s: TcpStream) -> SessionReader {
        SessionReader { session: self, sock: s, raw: vec![0; 64 << 10], start: 0, end: 0 }
    }
}

/// How a peer that does not speak TLS (`socket.ssl` off) answers a TLS
/// hello: it closes.
pub const PEER_CLOSED: &str = "the peer closed the connection during the TLS handshake";
/// How a refusal by the peer's TLS reads on the dialing side: with TLS
/// 1.3 the server checks the client's certificate after the client's
/// handshake is over, so the alert arrives in place of the Welcome.
pub const PEER_REFUSED: &str = "the peer refused the TLS connection";

fn tls_error(e: rustls::Error) -> io::Error {
    match e {
        rustls::Error::AlertReceived(alert) => io::Error::other(format!("{} (alert {:?})", PEER_REFUSED, alert)),
        e => io::Error::new(io::ErrorKind::InvalidData, e),
    }
}

pub struct HandshakeStream<'a> {
    session: &'a Session,
    sock: &'a TcpStream,
}

impl Read for HandshakeStream<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let mut c = self.session.lock();
        loop {
            match c.reader().read(out) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                other => return other,
            }
            if c.read_tls(&mut self.sock)? == 0 {
                return Ok(0);
            }
            c.process_new_packets().map_err(tls_error)?;
        }
    }
}

impl Write for HandshakeStream<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut scratch = Vec::new();
        self.session.send(self.sock, &[IoSlice::new(buf)], &mut scratch)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

pub struct SessionReader {
    session: Arc<Session>,
    sock: TcpStream,
    /// Records read from the socket and not yet given to rustls.
    raw: Vec<u8>,
    start: usize,
    end: usize,
}

impl Read for SessionReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        loop {
            {
                let mut c = self.session.lock();
                match c.reader().read(out) {
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    other => return other,
                }
                if self.start < self.end {
                    let mut pending = &self.raw[self.start..self.end];
                    self.start += c.read_tls(&mut pending)?;
                    c.process_new_packets().map_err(tls_error)?;
                    continue;
                }
            }
            let n = (&self.sock).read(&mut self.raw)?;
            if n == 0 {
                return Ok(0);
            }
            (self.start, self.end) = (0, n);
        }
    }
}

/// Certificates made in tests (rcgen), for the transport's and IST's.
#[cfg(test)]
pub mod testing {
    use super::TlsSettings;
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};

    pub struct Ca {
        pub cert: rcgen::Certificate,
        pub key: KeyPair,
    }

    pub fn ca(name: &str) -> Ca {
        let key = KeyPair::generate().expect("key");
        let mut p = CertificateParams::new(vec![]).expect("params");
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        p.distinguished_name.push(DnType::CommonName, name);
        Ca { cert: p.self_signed(&key).expect("CA"), key }
    }

    /// A node's key and certificate signed by `ca`, written to `dir`.
    pub fn node_files(dir: &std::path::Path, name: &str, ca: &Ca, cipher: &str) -> TlsSettings {
        let key = KeyPair::generate().expect("key");
        let cert = CertificateParams::new(vec![name.to_string()]).expect("params").signed_by(&key, &ca.cert, &ca.key).expect("cert");
        let path = |f: &str| dir.join(format!("{}-{}", name, f)).to_string_lossy().into_owned();
        std::fs::write(path("cert.pem"), cert.pem()).expect("write");
        std::fs::write(path("key.pem"), key.serialize_pem()).expect("write");
        std::fs::write(path("ca.pem"), ca.cert.pem()).expect("write");
        TlsSettings { cert: path("cert.pem"), key: path("key.pem"), ca: path("ca.pem"), cipher: cipher.into(), ..TlsSettings::default() }
    }

}
