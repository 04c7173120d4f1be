//! Logging in: NTLM inside SPNEGO (the sspi crate's Negotiate package, Kerberos left out),
//! one token per SESSION_SETUP round, and the session key the SMB keys derive from.

use sspi::ntlm::NtlmConfig;
use sspi::{
    AcquireCredentialsHandleResult, AuthIdentity, BufferType, ClientRequestFlags, CredentialUse, CredentialsBuffers,
    DataRepresentation, Negotiate, NegotiateConfig, SecurityBuffer, SecurityStatus, Sspi, SspiImpl, Username,
};

pub struct Login {
    ssp: Negotiate,
    creds: AcquireCredentialsHandleResult<Option<CredentialsBuffers>>,
    done: bool,
}

impl Login {
    /// `user`: `USER` or `DOMAIN\USER`.
    pub fn new(user: &str, password: &str) -> Result<Login, String> {
        let identity = AuthIdentity {
            username: Username::parse(user).map_err(|e| format!("user name {user:?}: {e}"))?,
            password: password.to_string().into(),
        };
        let config = NegotiateConfig::new(
            Box::new(NtlmConfig::default()),
            Some("ntlm,!kerberos,!pku2u".into()),
            "ioscope".into(),
        );
        let mut ssp = Negotiate::new_client(config).map_err(|e| format!("NTLM: {e}"))?;
        let creds = ssp
            .acquire_credentials_handle()
            .with_credential_use(CredentialUse::Outbound)
            .with_auth_data(&sspi::Credentials::AuthIdentity(identity))
            .execute(&mut ssp)
            .map_err(|e| format!("NTLM: {e}"))?;
        Ok(Login { ssp, creds, done: false })
    }

    /// The next token to send, from the server's last one (empty at the start).
    pub fn step(&mut self, server_token: &[u8]) -> Result<Vec<u8>, String> {
        let mut output = vec![SecurityBuffer::new(Vec::new(), BufferType::Token)];
        let mut input = vec![SecurityBuffer::new(server_token.to_vec(), BufferType::Token)];
        let mut builder = self
            .ssp
            .initialize_security_context()
            .with_credentials_handle(&mut self.creds.credentials_handle)
            .with_context_requirements(
                ClientRequestFlags::MUTUAL_AUTH | ClientRequestFlags::INTEGRITY | ClientRequestFlags::USE_SESSION_KEY,
            )
            .with_target_data_representation(DataRepresentation::Native)
            .with_output(&mut output)
            .with_input(&mut input);
        let result = self
            .ssp
            .initialize_security_context_impl(&mut builder)
            .and_then(|mut g| g.resolve_to_result())
            .map_err(|e| format!("NTLM: {e}"))?;
        match result.status {
            SecurityStatus::Ok => self.done = true,
            SecurityStatus::ContinueNeeded => {}
            other => return Err(format!("NTLM: unexpected state {other:?}")),
        }
        Ok(output.pop().map(|b| b.buffer).unwrap_or_default())
    }

    /// Whether the exchange is complete on this side.
    pub fn done(&self) -> bool {
        self.done
    }

    /// The session key (16 bytes for NTLM).
    pub fn session_key(&self) -> Result<Vec<u8>, String> {
        let k = self.ssp.query_context_session_key().map_err(|e| format!("NTLM session key: {e}"))?;
        let k: &[u8] = k.session_key.as_ref();
        Ok(k.get(..16).unwrap_or(k).to_vec())
    }
}
