//! Credentials, read when a run starts and never written anywhere: from the environment
//! (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), else from a profile of
//! the shared credentials file (AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials; the
//! target's `profile=`, else AWS_PROFILE, else `default`). The region: the target's
//! `region=`, else AWS_REGION, else AWS_DEFAULT_REGION, else us-east-1.

use std::path::PathBuf;

/// A key pair (and session token); `Debug` shows the key id only.
#[derive(Clone)]
pub struct Credentials {
    pub access_key_id: String,
    pub secret_access_key: String,
    pub session_token: Option<String>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Credentials({}, secret hidden)", self.access_key_id)
    }
}

/// Where the credentials were found, for messages: "the environment", "profile x of FILE".
pub type Source = String;

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// The credentials to sign with, and where they came from.
pub fn find(profile: Option<&str>) -> Result<(Credentials, Source), String> {
    if profile.is_none() {
        if let (Some(id), Some(secret)) = (env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY")) {
            let token = env("AWS_SESSION_TOKEN");
            return Ok((
                Credentials { access_key_id: id, secret_access_key: secret, session_token: token },
                "the environment".into(),
            ));
        }
    }
    let name = profile.map(str::to_string).or_else(|| env("AWS_PROFILE")).unwrap_or_else(|| "default".into());
    let file = env("AWS_SHARED_CREDENTIALS_FILE")
        .map(PathBuf::from)
        .or_else(|| env("HOME").map(|h| PathBuf::from(h).join(".aws/credentials")));
    let none = || {
        format!(
            "no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or put profile {name:?} in {}",
            file.as_ref().map_or("~/.aws/credentials".into(), |f| f.display().to_string())
        )
    };
    let Some(path) = file.as_ref() else { return Err(none()) };
    // A regular file of at most 1 MiB (never a FIFO, never read whole if huge); one that
    // is missing or not text holds no profile.
    let text = match ioscope_readfile::read(path, 1 << 20) {
        Ok(bytes) => String::from_utf8(bytes).unwrap_or_default(),
        Err(ioscope_readfile::FileError::Io(_)) => return Err(none()),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    match profile_of(&text, &name) {
        Some(c) => Ok((c, format!("profile {name:?} of {}", path.display()))),
        None => Err(none()),
    }
}

/// The keys of `[name]` in an INI credentials file.
fn profile_of(text: &str, name: &str) -> Option<Credentials> {
    let (mut inside, mut id, mut secret, mut token) = (false, None, None, None);
    for line in text.lines().map(str::trim) {
        if let Some(section) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let section = section.trim();
            inside = section == name || section.strip_prefix("profile ").map(str::trim) == Some(name);
            continue;
        }
        let Some((k, v)) = line.split_once('=').filter(|_| inside) else { continue };
        let v = v.trim().to_string();
        match k.trim() {
            "aws_access_key_id" => id = Some(v),
            "aws_secret_access_key" => secret = Some(v),
            "aws_session_token" => token = Some(v),
            _ => {}
        }
    }
    Some(Credentials { access_key_id: id?, secret_access_key: secret?, session_token: token })
}

/// The region to sign for.
pub fn region(asked: Option<&str>) -> String {
    asked
        .map(str::to_string)
        .or_else(|| env("AWS_REGION"))
        .or_else(|| env("AWS_DEFAULT_REGION"))
        .unwrap_or_else(|| "us-east-1".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_profile_is_read_from_its_section_only() {
        let text = "[default]\naws_access_key_id = A\naws_secret_access_key = B\n\n[profile bench]\naws_access_key_id=C\naws_secret_access_key=D\naws_session_token=E\n";
        let c = profile_of(text, "default").unwrap();
        assert_eq!((c.access_key_id.as_str(), c.secret_access_key.as_str(), c.session_token), ("A", "B", None));
        let c = profile_of(text, "bench").unwrap();
        assert_eq!((c.access_key_id.as_str(), c.session_token.as_deref()), ("C", Some("E")));
        assert!(profile_of(text, "other").is_none());
        assert!(profile_of("[x]\naws_access_key_id=1\n", "x").is_none(), "a key id without its secret");
        assert!(!format!("{c:?}").contains('D'), "the secret is never shown");
    }
}
