//! TLS 1.3 on a connection (GRIDMPI_WAN_TLS): the job's key and the byte
//! layer every socket read and write of an encrypted connection goes
//! through.
//!
//! Keyed per job. Both ends derive one Ed25519 key from the job secret
//! (seed = HMAC-SHA256(secret, "gridmpi tls key")) and a self-signed
//! certificate for it; each side presents it (mutual authentication) and
//! accepts the other's only if it carries exactly that public key, the
//! handshake signature being checked with rustls's own
//! `verify_tls13_signature`. No CA, no host names, no clock: whoever holds
//! the job secret is the job. Only TLS 1.3, no session tickets (a new
//! connection after a reset makes a new session, which costs one
//! signature each way).
//!
//! The authentication that was already there (HMAC over nonces, see
//! [`super::handshake`]) runs unchanged inside TLS; what TLS adds is the
//! confidentiality and integrity of the bytes on the wire.
//!
//! The layer ([`Session`]) drives rustls's sans-IO API with the
//! transport's own non-blocking socket: ciphertext is read from the socket
//! in large pieces and fed to rustls, plaintext comes out of rustls's
//! reader; plaintext goes into rustls's writer and the ciphertext made is
//! kept here until the socket takes it. That ciphertext is bounded (at
//! most one [`CHUNK`] is encrypted ahead of the socket), so the paced
//! write budget, which looks at what the socket holds unsent, still sees
//! nearly everything (`pending` is added to it).
//!
//! A connection is TLS from its first byte. The acceptor tells it by that
//! byte: a TLS record begins with 0x16 (handshake), GridMPI's HELLO with
//! its magic "GMPIhelo" (0x47), and a relay's preface never reaches the
//! acceptor.

use crate::auth;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls13_signature, CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{ClientConfig, ClientConnection, Connection, DigitallySignedStruct, DistinguishedName, ServerConfig, ServerConnection, SignatureScheme};
use std::io::{self, Read, Write};
use std::os::fd::RawFd;
use std::sync::Arc;

/// The first byte of a TLS handshake record (ContentType handshake).
pub(super) const TLS_FIRST_BYTE: u8 = 0x16;

/// At most this much plaintext is encrypted ahead of the socket.
const CHUNK: usize = 128 * 1024;

/// Ciphertext is read from the socket in pieces of up to this size (rustls
/// itself would read 4 KiB at a time: a system call per 4 KiB).
const READ_PIECE: usize = 128 * 1024;

/// An Ed25519 PKCS#8 v1 private key is this prefix and the 32-byte seed
/// (RFC 8410: version 0, algorithm id-Ed25519, the seed as an OCTET STRING
/// inside the privateKey OCTET STRING).
const PKCS8_ED25519_PREFIX: [u8; 16] = [0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20];

/// An Ed25519 SubjectPublicKeyInfo is this prefix and the 32-byte public key.
const SPKI_ED25519_PREFIX: [u8; 12] = [0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00];

/// The TLS side of a job: both configurations, made from its secret.
pub struct JobTls {
    client: Arc<ClientConfig>,
    server: Arc<ServerConfig>,
}

impl std::fmt::Debug for JobTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JobTls")
    }
}

/// The one public key a peer's certificate may carry.
#[derive(Debug)]
struct JobKeyVerifier {
    spki: Vec<u8>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl JobKeyVerifier {
    fn check(&self, end_entity: &CertificateDer<'_>) -> Result<(), rustls::Error> {
        let cert = webpki::EndEntityCert::try_from(end_entity)
            .map_err(|e| rustls::Error::InvalidCertificate(rustls::CertificateError::Other(rustls::OtherError(Arc::new(e)))))?;
        if cert.subject_public_key_info().as_ref() != self.spki.as_slice() {
            return Err(rustls::Error::General(
                "the peer's TLS certificate is not this job's (it holds another job secret: GRIDMPI_JOB_SECRET_FILE?)".into(),
            ));
        }
        Ok(())
    }

    fn signature(&self, message: &[u8], cert: &CertificateDer<'_>, dss: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, rustls::Error> {
        // The certificate was checked when it came; its key signs.
        verify_tls13_signature(message, cert, dss, &self.algorithms)
    }
}

impl ServerCertVerifier for JobKeyVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.check(end_entity).map(|_| ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(&self, _: &[u8], _: &CertificateDer<'_>, _: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, rustls::Error> {
        Err(rustls::Error::General("TLS 1.2 is not spoken between GridMPI ranks".into()))
    }

    fn verify_tls13_signature(&self, message: &[u8], cert: &CertificateDer<'_>, dss: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        vec![SignatureScheme::ED25519]
    }
}

impl ClientCertVerifier for JobKeyVerifier {
    fn client_auth_mandatory(&self) -> bool {
        true
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(&self, end_entity: &CertificateDer<'_>, _intermediates: &[CertificateDer<'_>], _now: UnixTime) -> Result<ClientCertVerified, rustls::Error> {
        self.check(end_entity).map(|_| ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(&self, _: &[u8], _: &CertificateDer<'_>, _: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, rustls::Error> {
        Err(rustls::Error::General("TLS 1.2 is not spoken between GridMPI ranks".into()))
    }

    fn verify_tls13_signature(&self, message: &[u8], cert: &CertificateDer<'_>, dss: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        vec![SignatureScheme::ED25519]
    }
}

/// The job's Ed25519 key as PKCS#8 (v1) DER.
fn job_key(secret: &[u8; 32]) -> Vec<u8> {
    let seed = auth::hmac_sha256(secret, &[b"gridmpi tls key"]);
    let mut der = PKCS8_ED25519_PREFIX.to_vec();
    der.extend_from_slice(&seed);
    der
}

impl JobTls {
    /// The configurations of the job with `secret`.
    pub fn new(secret: &[u8; 32]) -> Result<JobTls, String> {
        let pkcs8 = job_key(secret);
        let key = rcgen::KeyPair::try_from(pkcs8.as_slice()).map_err(|e| format!("the job's TLS key: {e}"))?;
        let mut spki = SPKI_ED25519_PREFIX.to_vec();
        spki.extend_from_slice(key.public_key_raw());
        let mut params = rcgen::CertificateParams::new(vec!["gridmpi".to_string()]).map_err(|e| format!("the job's TLS certificate: {e}"))?;
        params.distinguished_name.push(rcgen::DnType::CommonName, "GridMPI job");
        let cert = params.self_signed(&key).map_err(|e| format!("the job's TLS certificate: {e}"))?;
        let cert = cert.der().clone();
        let private = || PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(pkcs8.clone()));

        // TLS 1.3's suites only, AES-128-GCM first (the cheapest where the
        // CPU has AES instructions).
        let mut provider: CryptoProvider = rustls::crypto::ring::default_provider();
        provider.cipher_suites.retain(|s| s.version() == &rustls::version::TLS13);
        provider.cipher_suites.sort_by_key(|s| s.suite() != rustls::CipherSuite::TLS13_AES_128_GCM_SHA256);
        let verifier = Arc::new(JobKeyVerifier { spki, algorithms: provider.signature_verification_algorithms });
        let provider = Arc::new(provider);
        let tls = |e: rustls::Error| format!("TLS configuration: {e}");

        let mut server = ServerConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(tls)?
            .with_client_cert_verifier(verifier.clone())
            .with_single_cert(vec![cert.clone()], private())
            .map_err(tls)?;
        server.send_tls13_tickets = 0;
        let mut client = ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(tls)?
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_client_auth_cert(vec![cert], private())
            .map_err(tls)?;
        client.resumption = rustls::client::Resumption::disabled();
        client.enable_sni = false;
        Ok(JobTls { client: Arc::new(client), server: Arc::new(server) })
    }

    /// A session for a connection we make.
    pub(super) fn connect(&self) -> Result<Session, String> {
        let name = ServerName::try_from("gridmpi").expect("a valid name");
        let c = ClientConnection::new(self.client.clone(), name).map_err(|e| format!("TLS: {e}"))?;
        Ok(Session::new(Connection::Client(c)))
    }

    /// A session for a connection we accepted whose first byte was
    /// [`TLS_FIRST_BYTE`].
    pub(super) fn accept(&self) -> Result<Session, String> {
        let s = ServerConnection::new(self.server.clone()).map_err(|e| format!("TLS: {e}"))?;
        Ok(Session::new(Connection::Server(s)))
    }
}

/// One connection's TLS session and its buffers.
pub(super) struct Session {
    tls: Connection,
    /// Ciphertext rustls made that the socket has not taken yet (from `out_at`).
    out: Vec<u8>,
    out_at: usize,
    /// Ciphertext read from the socket and not yet given to rustls.
    inb: Vec<u8>,
    in_at: usize,
    in_end: usize,
    /// The socket said end of stream.
    eof: bool,
}

/// recv without blocking: bytes read, 0 at end of stream, None would block.
fn recv(fd: RawFd, buf: &mut [u8]) -> io::Result<Option<usize>> {
    // SAFETY: reading into our own buffer.
    crate::sys::nonblocking(|| unsafe { libc::recv(fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len(), libc::MSG_DONTWAIT) })
}

/// A TLS failure as the transport's read and write paths report errors.
fn tls_error(e: rustls::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("TLS: {e}"))
}

impl Session {
    fn new(mut tls: Connection) -> Session {
        // Our own bound (CHUNK) keeps what rustls buffers small; its own
        // limit must not cut a chunk short for nothing.
        tls.set_buffer_limit(Some(2 * CHUNK));
        Session { tls, out: Vec::new(), out_at: 0, inb: Vec::new(), in_at: 0, in_end: 0, eof: false }
    }

    /// Bytes to write before anything of TLS (a relay's preface: the relays
    /// read it, the peer never sees it).
    pub(super) fn preface(&mut self, bytes: &[u8]) {
        debug_assert!(self.out.is_empty());
        self.out.extend_from_slice(bytes);
    }

    /// Ciphertext waiting for the socket.
    pub(super) fn pending(&self) -> usize {
        self.out.len() - self.out_at
    }

    /// Whether the TLS handshake is still going on.
    pub(super) fn handshaking(&self) -> bool {
        self.tls.is_handshaking()
    }

    /// Move what rustls has to send into `out`.
    fn collect(&mut self) {
        while self.tls.wants_write() {
            if self.out_at == self.out.len() {
                self.out.clear();
                self.out_at = 0;
            }
            // Writing into a Vec cannot fail.
            if self.tls.write_tls(&mut self.out).is_err() {
                break;
            }
        }
    }

    /// Write waiting ciphertext until the socket would block.
    pub(super) fn flush(&mut self, fd: RawFd) -> io::Result<()> {
        self.collect();
        while self.out_at < self.out.len() {
            let rest = &self.out[self.out_at..];
            let iov = [libc::iovec { iov_base: rest.as_ptr() as *mut libc::c_void, iov_len: rest.len() }];
            // SAFETY: the iovec covers our own buffer.
            match unsafe { super::sendq::send_iov(fd, &iov)? } {
                Some(n) => self.out_at += n,
                None => break,
            }
        }
        if self.out_at == self.out.len() {
            self.out.clear();
            self.out_at = 0;
            if self.out.capacity() > 4 * CHUNK {
                self.out.shrink_to(CHUNK);
            }
        }
        Ok(())
    }

    /// Encrypt plaintext from `iov` (up to [`CHUNK`] bytes) and write what
    /// the socket takes. Some(n): n plaintext bytes are now the session's
    /// to deliver (the caller's memory may change); None: earlier
    /// ciphertext still waits for the socket, nothing was taken.
    ///
    /// # Safety
    /// Every iovec must point at `iov_len` readable bytes.
    pub(super) unsafe fn write(&mut self, fd: RawFd, iov: &[libc::iovec]) -> io::Result<Option<usize>> {
        self.flush(fd)?;
        if self.pending() > 0 {
            return Ok(None);
        }
        let mut slices = Vec::with_capacity(iov.len());
        let mut total = 0usize;
        for v in iov {
            if total >= CHUNK {
                break;
            }
            let len = v.iov_len.min(CHUNK - total);
            // SAFETY: the caller vouches that every iovec points at
            // iov_len readable bytes (as for sendmsg).
            slices.push(io::IoSlice::new(unsafe { std::slice::from_raw_parts(v.iov_base as *const u8, len) }));
            total += len;
        }
        let n = self.tls.writer().write_vectored(&slices)?;
        self.flush(fd)?;
        // (rustls takes nothing only past its buffer limit, which the
        // chunk stays below; a caller is told to wait, not that 0 went.)
        Ok((n > 0 || total == 0).then_some(n))
    }

    /// Read plaintext into `bufs`: Some(n > 0) bytes, Some(0) the peer
    /// closed (with or without TLS's close_notify: a reset connection is
    /// resumed either way, and its stream positions say what arrived),
    /// None nothing more until the socket is readable again. Replies TLS
    /// owes the peer (its handshake, key updates) are written on the way.
    pub(super) fn read(&mut self, fd: RawFd, bufs: &mut [io::IoSliceMut<'_>]) -> io::Result<Option<usize>> {
        loop {
            match self.tls.reader().read_vectored(bufs) {
                Ok(n) => return Ok(Some(n)),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(Some(0)),
                Err(e) => return Err(e),
            }
            if self.eof {
                return Ok(Some(0));
            }
            if self.in_at == self.in_end {
                if self.inb.len() < READ_PIECE {
                    self.inb.resize(READ_PIECE, 0);
                }
                match recv(fd, &mut self.inb)? {
                    None => return Ok(None),
                    Some(0) => {
                        self.eof = true;
                        // Tell rustls: its reader then says how the stream ended.
                        let _ = self.tls.read_tls(&mut io::empty());
                    }
                    Some(n) => {
                        self.in_at = 0;
                        self.in_end = n;
                    }
                }
            }
            if self.in_at < self.in_end {
                let mut rest = &self.inb[self.in_at..self.in_end];
                let n = self.tls.read_tls(&mut rest as &mut dyn Read)?;
                self.in_at += n;
            }
            if let Err(e) = self.tls.process_new_packets() {
                // Tell the peer why (rustls queued an alert), then fail.
                let _ = self.flush(fd);
                return Err(tls_error(e));
            }
            self.flush(fd)?;
        }
    }

    /// Say goodbye (close_notify) before the socket closes, as far as the
    /// socket takes it now.
    pub(super) fn close(&mut self, fd: RawFd) {
        self.tls.send_close_notify();
        let _ = self.flush(fd);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_the_secrets_and_the_prefix_makes_pkcs8() {
        let a = job_key(&[1; 32]);
        assert_eq!(a.len(), 48);
        assert_eq!(a, job_key(&[1; 32]));
        assert_ne!(a, job_key(&[2; 32]));
        // ring reads it as an Ed25519 key (through rcgen).
        let k = rcgen::KeyPair::try_from(a.as_slice()).unwrap();
        assert_eq!(k.public_key_raw().len(), 32);
        let mut spki = SPKI_ED25519_PREFIX.to_vec();
        spki.extend_from_slice(k.public_key_raw());
        assert_eq!(spki, k.public_key_der());
    }

    #[test]
    fn the_hello_of_gridmpi_is_never_taken_for_tls() {
        assert_ne!(b"GMPIhelo"[0], TLS_FIRST_BYTE);
    }

    /// Two sessions in memory, bytes carried between them by hand.
    fn talk(client: &mut Connection, server: &mut Connection) -> Result<(), rustls::Error> {
        for _ in 0..10 {
            let mut buf = Vec::new();
            while client.wants_write() {
                client.write_tls(&mut buf).unwrap();
            }
            if !buf.is_empty() {
                server.read_tls(&mut buf.as_slice()).unwrap();
                server.process_new_packets()?;
            }
            let mut buf = Vec::new();
            while server.wants_write() {
                server.write_tls(&mut buf).unwrap();
            }
            if !buf.is_empty() {
                client.read_tls(&mut buf.as_slice()).unwrap();
                client.process_new_packets()?;
            }
        }
        Ok(())
    }

    #[test]
    fn the_same_secret_agrees_and_another_is_refused_either_way() {
        let a = JobTls::new(&[7; 32]).unwrap();
        let b = JobTls::new(&[7; 32]).unwrap();
        let other = JobTls::new(&[8; 32]).unwrap();
        let mut c = a.connect().unwrap().tls;
        let mut s = b.accept().unwrap().tls;
        talk(&mut c, &mut s).unwrap();
        assert!(!c.is_handshaking() && !s.is_handshaking());
        assert_eq!(c.protocol_version(), Some(rustls::ProtocolVersion::TLSv1_3));
        // The caller of another job is refused by the acceptor...
        let mut c = other.connect().unwrap().tls;
        let mut s = a.accept().unwrap().tls;
        assert!(talk(&mut c, &mut s).is_err());
        // ...and an acceptor of another job by the caller.
        let mut c = a.connect().unwrap().tls;
        let mut s = other.accept().unwrap().tls;
        assert!(talk(&mut c, &mut s).is_err());
    }
}
