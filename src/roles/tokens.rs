//! Tokens a role hands out over HTTP and later takes back as proof that it gave them: an FDN's
//! session names, the farm dispatcher's tickets. A token is `ID-TAG`, TAG the HMAC-SHA256 of
//! the id under a key drawn from the OS's random source, bound to what the token is for (a
//! context string), and checked in constant time. Without the key nobody can make one, nor
//! turn one token into another (another id, another context).

use ring::hmac;
use ring::rand::{SecureRandom, SystemRandom};
use serde::{Deserialize, Serialize};

/// The bytes of a key.
pub const KEY_BYTES: usize = 32;

/// A key's bytes, as one node hands them to another over the control plane. Its `Debug`
/// prints none of them, so a logged message never holds a key.
#[derive(Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyBytes(pub [u8; KEY_BYTES]);

impl std::fmt::Debug for KeyBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("KeyBytes(..)")
    }
}

/// The hexadecimal digits of a tag (all of HMAC-SHA256's 32 bytes).
const TAG_DIGITS: usize = 64;

/// A key that makes and checks tokens.
pub struct TokenKey {
    key: hmac::Key,
    bytes: KeyBytes,
}

impl TokenKey {
    /// A fresh key from the OS's random source.
    pub fn generate() -> Result<TokenKey, String> {
        let mut bytes = [0; KEY_BYTES];
        SystemRandom::new()
            .fill(&mut bytes)
            .map_err(|_| "the OS's random source failed".to_string())?;
        Ok(TokenKey::from_bytes(KeyBytes(bytes)))
    }

    /// The key whose bytes another node sent (the farm's servers get the dispatcher's).
    pub fn from_bytes(bytes: KeyBytes) -> TokenKey {
        TokenKey {
            key: hmac::Key::new(hmac::HMAC_SHA256, &bytes.0),
            bytes,
        }
    }

    /// The key's bytes, to hand to a node that must check this key's tokens.
    pub fn bytes(&self) -> KeyBytes {
        self.bytes
    }

    /// The token for `id` in `context` (what it is for: a server and a content, say).
    pub fn token(&self, context: &str, id: u64) -> String {
        let tag = hmac::sign(&self.key, &message(context, id));
        let mut token = format!("{id}-");
        for byte in tag.as_ref() {
            token.push_str(&format!("{byte:02x}"));
        }
        token
    }

    /// The id a token of `context` names, if this key made it.
    pub fn id_of(&self, context: &str, token: &str) -> Option<u64> {
        let (id, tag) = token.split_once('-')?;
        // The id as `token` writes it, its one spelling: `parse` alone would take a `+` or
        // leading zeros.
        let canonical = id == "0" || (!id.starts_with('0') && !id.is_empty());
        if !canonical || !id.bytes().all(|b| b.is_ascii_digit()) || tag.len() != TAG_DIGITS {
            return None;
        }
        let id: u64 = id.parse().ok()?;
        let tag = unhex(tag)?;
        hmac::verify(&self.key, &message(context, id), &tag).ok()?;
        Some(id)
    }
}

/// What a tag covers: the context, a separator no context holds, and the id.
fn message(context: &str, id: u64) -> Vec<u8> {
    let mut message = context.as_bytes().to_vec();
    message.push(0);
    message.extend_from_slice(&id.to_be_bytes());
    message
}

/// The bytes a string of lowercase hexadecimal digit pairs spells.
fn unhex(text: &str) -> Option<Vec<u8>> {
    let digit = |b: u8| match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        _ => None,
    };
    let bytes = text.as_bytes();
    if !bytes.len().is_multiple_of(2) {
        return None;
    }
    (bytes.chunks(2))
        .map(|pair| Some((digit(pair[0])? << 4) | digit(pair[1])?))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_keys_own_tokens_for_their_context_are_taken() {
        let key = TokenKey::generate().unwrap();
        let token = key.token("s1/7", 42);
        assert_eq!(key.id_of("s1/7", &token), Some(42));
        // The same key's token, shared with another node by its bytes, is checked alike.
        let copy = TokenKey::from_bytes(key.bytes());
        assert_eq!(copy.id_of("s1/7", &token), Some(42));
        // Another context, another id under the same tag, a changed or cut tag, another key.
        assert_eq!(key.id_of("s2/7", &token), None);
        let (_, tag) = token.split_once('-').unwrap();
        assert_eq!(key.id_of("s1/7", &format!("43-{tag}")), None);
        assert_eq!(key.id_of("s1/7", &format!("+42-{tag}")), None);
        assert_eq!(key.id_of("s1/7", &format!("042-{tag}")), None);
        assert_eq!(format!("{:?}", key.bytes()), "KeyBytes(..)");
        let mut flipped = token.clone().into_bytes();
        let last = flipped.len() - 1;
        flipped[last] = if flipped[last] == b'0' { b'1' } else { b'0' };
        assert_eq!(
            key.id_of("s1/7", &String::from_utf8(flipped).unwrap()),
            None
        );
        assert_eq!(key.id_of("s1/7", &token[..token.len() - 2]), None);
        assert_eq!(key.id_of("s1/7", &token.to_uppercase()), None);
        assert_eq!(key.id_of("s1/7", "42"), None);
        assert_eq!(key.id_of("s1/7", ""), None);
        let other = TokenKey::generate().unwrap();
        assert_ne!(other.bytes(), key.bytes());
        assert_eq!(other.id_of("s1/7", &token), None);
    }
}
