//! Secrets kept out of every message: a URL's password and the signatures and tokens of its
//! query string (a pre-signed URL's), and storage options whose names hold a secret, shown
//! as `****`, as pip and git print `https://user:****@host`.

use std::borrow::Cow;

/// What a secret is shown as.
const HIDDEN: &str = "****";

/// Whether a name (a query parameter's, a storage option's) holds a secret: signatures,
/// tokens, credentials, keys, secrets and passwords, in any case (`X-Amz-Signature`,
/// `X-Amz-Security-Token`, Azure's `sig`, `aws_secret_access_key`, ...).
pub(crate) fn names_a_secret(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    ["sig", "token", "credential", "secret", "password", "key"]
        .iter()
        .any(|word| name.contains(word))
}

/// `text` with every URL's password and secret query parameters shown as `****`; the rest,
/// byte for byte as it was.
pub fn redact(text: &str) -> Cow<'_, str> {
    if !text.contains("://") {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let (before, from) = rest.split_at(at + 3);
        out.push_str(before);
        // The URL runs to the first blank or quote.
        let end = from
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | '`'))
            .unwrap_or(from.len());
        out.push_str(&redact_url_tail(&from[..end]));
        rest = &from[end..];
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// A URL after its `scheme://`, with its password and secret query parameters hidden.
fn redact_url_tail(tail: &str) -> String {
    let authority_end = tail.find(['/', '?', '#']).unwrap_or(tail.len());
    let (authority, path) = tail.split_at(authority_end);
    let mut out = match authority.rsplit_once('@') {
        Some((user_info, host)) => match user_info.split_once(':') {
            Some((user, _password)) => format!("{user}:{HIDDEN}@{host}"),
            None => authority.to_owned(),
        },
        None => authority.to_owned(),
    };
    let Some((before_query, query)) = path.split_once('?') else {
        out.push_str(path);
        return out;
    };
    out.push_str(before_query);
    out.push('?');
    let (query, fragment) = match query.split_once('#') {
        Some((q, f)) => (q, Some(f)),
        None => (query, None),
    };
    let pairs: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((name, _)) if names_a_secret(name) => format!("{name}={HIDDEN}"),
            _ => pair.to_owned(),
        })
        .collect();
    out.push_str(&pairs.join("&"));
    if let Some(fragment) = fragment {
        out.push('#');
        out.push_str(fragment);
    }
    out
}

/// A storage option's value as a message may show it: `****` for a secret's.
#[cfg(feature = "remote")]
pub(crate) fn option_value<'v>(name: &str, value: &'v str) -> Cow<'v, str> {
    match names_a_secret(name) {
        true => Cow::Borrowed(HIDDEN),
        false => redact(value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_and_signatures_are_hidden_and_the_rest_kept() {
        assert_eq!(
            redact("https://user:pa55word@host:8080/b/m.dbdf: forbidden (403)"),
            "https://user:****@host:8080/b/m.dbdf: forbidden (403)"
        );
        assert_eq!(
            redact(
                "no object at https://b.s3.amazonaws.com/m.dbdf?X-Amz-Algorithm=AWS4-HMAC-SHA256\
                 &X-Amz-Credential=AKIA%2F20261202&X-Amz-Signature=abc123&X-Amz-Expires=60"
            ),
            "no object at https://b.s3.amazonaws.com/m.dbdf?X-Amz-Algorithm=AWS4-HMAC-SHA256\
             &X-Amz-Credential=****&X-Amz-Signature=****&X-Amz-Expires=60"
        );
        assert_eq!(
            redact("az://c/m.dbdf?sv=2024&sig=s3cr3t#top and s3://b/k?token=t 'x://u:p@h'"),
            "az://c/m.dbdf?sv=2024&sig=****#top and s3://b/k?token=**** 'x://u:****@h'"
        );
        // A user without a password, an e-mail beside a URL, and text without URLs stay.
        assert_eq!(redact("ftp://anonymous@host/x"), "ftp://anonymous@host/x");
        assert_eq!(redact("ask a@b.c: it failed"), "ask a@b.c: it failed");
        assert!(matches!(redact("m.dbdf: not found"), Cow::Borrowed(_)));
    }

    #[test]
    #[cfg(feature = "remote")]
    fn secret_storage_options_are_hidden_by_name() {
        assert_eq!(option_value("aws_secret_access_key", "wJalr"), HIDDEN);
        assert_eq!(
            option_value("azure_storage_sas_token", "sv=1&sig=x"),
            HIDDEN
        );
        assert_eq!(option_value("aws_region", "eu-west-1"), "eu-west-1");
        assert_eq!(
            option_value("aws_endpoint_url", "http://u:p@localhost:9000"),
            "http://u:****@localhost:9000"
        );
    }
}
