//! MCP's authorization end to end (`MCP_OAUTH`): the protected resource's metadata and the 401
//! that points at it; the gateway as its own authorization server — registration, the consent
//! page and its key, PKCE, codes used once, tokens at `/mcp`, refresh, revocation —, the same
//! across two replicas sharing Redis; and an external issuer's JWTs checked against its JWKS.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::support::external::needs;
use crate::support::gateway::TestGateway;
use crate::support::redis::RedisServer;
use crate::support::stack::SimStack;

const PERSON_KEY: &str = "person-key-0123456789";
const PUBLIC: &str = "https://gateway.example";
const REDIRECT: &str = "http://127.0.0.1:33418/callback";
const VERIFIER: &str = "a-pkce-verifier-of-at-least-forty-three-characters-0123456789";

fn challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

fn keys_file() -> tempfile::NamedTempFile {
    crate::support::keys::keys_file(&[("person", PERSON_KEY, "")])
}

async fn keyed_stack(keys: &tempfile::NamedTempFile, extra: &[(&str, &str)]) -> SimStack {
    let path = keys.path().to_str().expect("utf-8").to_owned();
    let mut vars = vec![
        ("API_KEYS_FILE", path.as_str()),
        ("PUBLIC_URL", PUBLIC),
        ("TEST_CLIENT_KEY", PERSON_KEY),
    ];
    vars.extend_from_slice(extra);
    SimStack::start(&[], &vars).await
}

/// `tools/list` at `/mcp` with `bearer`.
async fn mcp(g: &TestGateway, bearer: Option<&str>) -> reqwest::Response {
    let mut request = g
        .http
        .post(format!("{}/mcp", g.url))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string());
    if let Some(bearer) = bearer {
        request = request.bearer_auth(bearer);
    }
    request.send().await.expect("the gateway answers")
}

async fn register(g: &TestGateway, body: Value) -> (u16, Value) {
    let response = g
        .http
        .post(format!("{}/oauth/register", g.url))
        .json(&body)
        .send()
        .await
        .expect("answers");
    let status = response.status().as_u16();
    (status, response.json().await.expect("JSON"))
}

async fn client_id(g: &TestGateway) -> String {
    let (status, body) = register(
        g,
        json!({"client_name": "test <i>app</i>", "redirect_uris": [REDIRECT]}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["token_endpoint_auth_method"], "none");
    body["client_id"].as_str().expect("client_id").to_owned()
}

fn authorize_params(client_id: &str, verifier: &str) -> Vec<(&'static str, String)> {
    vec![
        ("response_type", "code".into()),
        ("client_id", client_id.into()),
        ("redirect_uri", REDIRECT.into()),
        ("state", "st4te".into()),
        ("code_challenge", challenge(verifier)),
        ("code_challenge_method", "S256".into()),
        ("resource", format!("{PUBLIC}/mcp")),
    ]
}

/// The consent form submitted with `key`: the response (a 303 to the client, or the page again).
async fn consent(g: &TestGateway, client_id: &str, key: &str) -> reqwest::Response {
    let mut form = authorize_params(client_id, VERIFIER);
    form.push(("api_key", key.into()));
    form.push(("decision", "allow".into()));
    g.http
        .post(format!("{}/oauth/authorize", g.url))
        .form(&form)
        .send()
        .await
        .expect("answers")
}

/// A code for `client_id`, the person allowing with their key.
async fn code(g: &TestGateway, client_id: &str) -> String {
    let answer = consent(g, client_id, PERSON_KEY).await;
    assert_eq!(answer.status(), 303);
    let location = answer.headers()["location"]
        .to_str()
        .expect("ascii")
        .to_owned();
    let url = url::Url::parse(&location).expect("a URL");
    let params: std::collections::HashMap<_, _> = url.query_pairs().into_owned().collect();
    assert!(location.starts_with(REDIRECT), "{location}");
    assert_eq!(params["state"], "st4te");
    assert_eq!(params["iss"], PUBLIC);
    params["code"].clone()
}

async fn token(g: &TestGateway, form: &[(&str, &str)]) -> (u16, Value) {
    let response = g
        .http
        .post(format!("{}/oauth/token", g.url))
        .form(form)
        .send()
        .await
        .expect("answers");
    let status = response.status().as_u16();
    assert_eq!(response.headers()["cache-control"], "no-store");
    (status, response.json().await.expect("JSON"))
}

async fn exchange(g: &TestGateway, client_id: &str, code: &str, verifier: &str) -> (u16, Value) {
    token(
        g,
        &[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("client_id", client_id),
            ("redirect_uri", REDIRECT),
            ("code_verifier", verifier),
        ],
    )
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn the_metadata_and_the_401_tell_a_client_where_to_sign_in() {
    let keys = keys_file();
    let s = keyed_stack(&keys, &[]).await;
    let g = &s.gateway;
    let refused = mcp(g, None).await;
    assert_eq!(refused.status(), 401);
    assert_eq!(
        refused.headers()["www-authenticate"],
        format!("Bearer resource_metadata=\"{PUBLIC}/.well-known/oauth-protected-resource/mcp\"")
    );
    let invalid = mcp(g, Some("sgw_at_forged")).await;
    assert_eq!(invalid.status(), 401);
    assert!(invalid.headers()["www-authenticate"]
        .to_str()
        .expect("ascii")
        .ends_with("error=\"invalid_token\""));
    // An API key still works at /mcp.
    assert_eq!(mcp(g, Some(PERSON_KEY)).await.status(), 200);
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let metadata: Value = g
            .http
            .get(format!("{}{path}", g.url))
            .send()
            .await
            .expect("answers")
            .json()
            .await
            .expect("JSON");
        assert_eq!(metadata["resource"], format!("{PUBLIC}/mcp"));
        assert_eq!(metadata["authorization_servers"], json!([PUBLIC]));
    }
    let server: Value = g
        .http
        .get(format!("{}/.well-known/oauth-authorization-server", g.url))
        .send()
        .await
        .expect("answers")
        .json()
        .await
        .expect("JSON");
    assert_eq!(server["issuer"], PUBLIC);
    assert_eq!(server["token_endpoint"], format!("{PUBLIC}/oauth/token"));
    assert_eq!(server["code_challenge_methods_supported"], json!(["S256"]));
    let capabilities: Value = g
        .http
        .get(format!("{}/v1/capabilities", g.url))
        .bearer_auth(PERSON_KEY)
        .send()
        .await
        .expect("answers")
        .json()
        .await
        .expect("JSON");
    assert_eq!(capabilities["mcp"]["oauth"]["issuer"], PUBLIC);
    assert_eq!(
        capabilities["mcp"]["oauth"]["own_authorization_server"],
        true
    );
    // The other doors are untouched: a key, not a token.
    let search = g
        .http
        .get(format!("{}/search?q=x&format=json", g.url))
        .bearer_auth(PERSON_KEY)
        .send()
        .await
        .expect("answers");
    assert_eq!(search.status(), 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_person_signs_in_with_their_key_and_the_client_gets_tokens_bound_to_it() {
    let keys = keys_file();
    let s = keyed_stack(&keys, &[]).await;
    let g = &s.gateway;
    // Registration refuses what it cannot take, by name.
    let (status, body) = register(g, json!({"redirect_uris": ["http://evil.example/cb"]})).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_redirect_uri"))
    );
    let (status, body) = register(
        g,
        json!({"redirect_uris": [REDIRECT], "grant_types": ["client_credentials"]}),
    )
    .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_client_metadata"))
    );
    assert!(body["error_description"]
        .as_str()
        .expect("text")
        .contains("client_credentials"));
    let client = client_id(g).await;

    // The consent page names the client as text, and is fenced.
    let page = g
        .http
        .get(format!("{}/oauth/authorize", g.url))
        .query(&authorize_params(&client, VERIFIER))
        .send()
        .await
        .expect("answers");
    assert_eq!(page.status(), 200);
    assert_eq!(page.headers()["x-frame-options"], "DENY");
    let html = page.text().await.expect("text");
    assert!(html.contains("test &lt;i&gt;app&lt;/i&gt;") && !html.contains("<i>app"));
    // An unknown client is told on the page, never redirected.
    let unknown = g
        .http
        .get(format!("{}/oauth/authorize", g.url))
        .query(&authorize_params("sgw_client_nobody", VERIFIER))
        .send()
        .await
        .expect("answers");
    assert_eq!(unknown.status(), 400);
    // Plain PKCE goes back to the client as an error.
    let mut plain = authorize_params(&client, VERIFIER);
    plain.retain(|(name, _)| *name != "code_challenge_method");
    plain.push(("code_challenge_method", "plain".into()));
    let refused = g
        .http
        .get(format!("{}/oauth/authorize", g.url))
        .query(&plain)
        .send()
        .await
        .expect("answers");
    assert_eq!(refused.status(), 303);
    let location = refused.headers()["location"].to_str().expect("ascii");
    assert!(
        location.starts_with(REDIRECT) && location.contains("error=invalid_request"),
        "{location}"
    );

    // A wrong key: the page again, 401, no code.
    let wrong = consent(g, &client, "not-the-key").await;
    assert_eq!(wrong.status(), 401);

    // A code whose verifier does not match is spent: the right verifier cannot use it after.
    let spent = code(g, &client).await;
    let (status, body) = exchange(g, &client, &spent, "x".repeat(43).as_str()).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_grant"))
    );
    let (status, _) = exchange(g, &client, &spent, VERIFIER).await;
    assert_eq!(status, 400);

    let code = code(g, &client).await;
    let (status, tokens) = exchange(g, &client, &code, VERIFIER).await;
    assert_eq!(status, 200, "{tokens}");
    assert_eq!(tokens["token_type"], "Bearer");
    assert_eq!(tokens["scope"], "mcp");
    let access = tokens["access_token"].as_str().expect("access").to_owned();
    let refresh = tokens["refresh_token"]
        .as_str()
        .expect("refresh")
        .to_owned();
    // A code is used once.
    let (status, body) = exchange(g, &client, &code, VERIFIER).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_grant"))
    );

    let served = mcp(g, Some(&access)).await;
    assert_eq!(served.status(), 200);
    assert!(served.text().await.expect("body").contains("web_search"));
    // The token is for /mcp only: another door takes keys.
    let search = g
        .http
        .get(format!("{}/search?q=x&format=json", g.url))
        .bearer_auth(&access)
        .send()
        .await
        .expect("answers");
    assert_eq!(search.status(), 401);

    // Refresh: new tokens, the old refresh token spent.
    let (status, renewed) = token(
        g,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", &refresh),
            ("client_id", &client),
        ],
    )
    .await;
    assert_eq!(status, 200, "{renewed}");
    let access2 = renewed["access_token"].as_str().expect("access").to_owned();
    assert_ne!(access2, access);
    let (status, _) = token(
        g,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", &refresh),
            ("client_id", &client),
        ],
    )
    .await;
    assert_eq!(status, 400);

    // Revocation: the token stops working.
    let revoked = g
        .http
        .post(format!("{}/oauth/revoke", g.url))
        .form(&[("token", access2.as_str())])
        .send()
        .await
        .expect("answers");
    assert_eq!(revoked.status(), 200);
    assert_eq!(mcp(g, Some(&access2)).await.status(), 401);

    let metrics = g
        .http
        .get(format!("{}{}", g.url, g.metrics_path))
        .send()
        .await
        .expect("answers")
        .text()
        .await
        .expect("text");
    for event in [
        "registered",
        "allowed",
        "denied",
        "issued",
        "refreshed",
        "revoked",
        "token_accepted",
    ] {
        assert!(
            metrics.contains(&format!("oauth_events_total{{event=\"{event}\"}}")),
            "no {event} in the metrics"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn replicas_sharing_redis_take_each_others_codes_and_revocations() {
    needs!(RedisServer);
    let redis = RedisServer::start().await;
    let keys = keys_file();
    let url = redis.url();
    let mut s = keyed_stack(&keys, &[("REDIS_URL", url.as_str())]).await;
    let other = s.replica().await;
    let a = &s.gateway;
    let client = client_id(a).await;
    let code = code(a, &client).await;
    let (status, tokens) = exchange(&other, &client, &code, VERIFIER).await;
    assert_eq!(status, 200, "{tokens}");
    let access = tokens["access_token"].as_str().expect("access").to_owned();
    assert_eq!(mcp(a, Some(&access)).await.status(), 200);
    assert_eq!(mcp(&other, Some(&access)).await.status(), 200);
    let revoked = other
        .http
        .post(format!("{}/oauth/revoke", other.url))
        .form(&[("token", access.as_str())])
        .send()
        .await
        .expect("answers");
    assert_eq!(revoked.status(), 200);
    assert_eq!(mcp(a, Some(&access)).await.status(), 401);
}

/// An external issuer on loopback: its OpenID metadata and JWKS, a P-256 key of its own.
struct Issuer {
    url: String,
    pkcs8: Vec<u8>,
    _server: tokio::task::JoinHandle<()>,
}

impl Issuer {
    async fn start() -> Self {
        use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
        let rng = ring::rand::SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .expect("a key")
            .as_ref()
            .to_vec();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &pkcs8, &rng)
            .expect("the key");
        let point = pair.public_key().as_ref();
        let jwks = json!({"keys": [{
            "kty": "EC", "crv": "P-256", "kid": "k1", "use": "sig", "alg": "ES256",
            "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
            "y": URL_SAFE_NO_PAD.encode(&point[33..65]),
        }]});
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let metadata = json!({"issuer": url, "jwks_uri": format!("{url}/jwks")});
        let app = axum::Router::new()
            .route(
                "/.well-known/openid-configuration",
                axum::routing::get(move || async move { axum::Json(metadata) }),
            )
            .route(
                "/jwks",
                axum::routing::get(move || async move { axum::Json(jwks) }),
            );
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self {
            url,
            pkcs8,
            _server: server,
        }
    }

    fn token(&self, claims: &Value) -> String {
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
        header.kid = Some("k1".into());
        jsonwebtoken::encode(
            &header,
            claims,
            &jsonwebtoken::EncodingKey::from_ec_der(&self.pkcs8),
        )
        .expect("signed")
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_external_issuers_tokens_are_checked_against_its_keys() {
    let issuer = Issuer::start().await;
    let s = SimStack::start(
        &[],
        &[
            ("PUBLIC_URL", PUBLIC),
            ("MCP_OAUTH_ISSUER", issuer.url.as_str()),
        ],
    )
    .await;
    let g = &s.gateway;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs();
    let claims =
        |aud: &str, exp: u64| json!({"iss": issuer.url, "aud": aud, "sub": "user-7", "exp": exp});
    let resource = format!("{PUBLIC}/mcp");
    // An open gateway still asks for a token at /mcp once OAuth is on; its other doors stay open.
    assert_eq!(mcp(g, None).await.status(), 401);
    let search = g
        .http
        .get(format!("{}/search?q=x&format=json", g.url))
        .send()
        .await
        .expect("answers");
    assert_eq!(search.status(), 200);
    let metadata: Value = g
        .http
        .get(format!("{}/.well-known/oauth-protected-resource", g.url))
        .send()
        .await
        .expect("answers")
        .json()
        .await
        .expect("JSON");
    assert_eq!(metadata["authorization_servers"], json!([issuer.url]));
    // The gateway's own server is not there.
    let own = g
        .http
        .get(format!("{}/.well-known/oauth-authorization-server", g.url))
        .send()
        .await
        .expect("answers");
    assert_eq!(own.status(), 404);

    assert_eq!(
        mcp(g, Some(&issuer.token(&claims(&resource, now + 600))))
            .await
            .status(),
        200
    );
    assert_eq!(
        mcp(g, Some(&issuer.token(&claims(&resource, now - 600))))
            .await
            .status(),
        401,
        "expired"
    );
    assert_eq!(
        mcp(
            g,
            Some(&issuer.token(&claims("https://other.example/mcp", now + 600)))
        )
        .await
        .status(),
        401,
        "another audience"
    );
    // A token signed with a shared secret (HS256) is never taken, whatever it says.
    let hs = jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
        &claims(&resource, now + 600),
        &jsonwebtoken::EncodingKey::from_secret(b"guess"),
    )
    .expect("signed");
    assert_eq!(mcp(g, Some(&hs)).await.status(), 401);
    // A token of another key (forged by someone else with the same kid).
    let forger = Issuer::start().await;
    assert_eq!(
        mcp(g, Some(&forger.token(&claims(&resource, now + 600))))
            .await
            .status(),
        401
    );
}
