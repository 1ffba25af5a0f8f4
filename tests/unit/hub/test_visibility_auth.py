"""Delegated authentication's pure parts: the trust ConfigMap, certificates, headers, RBAC words.

Certificates are real (made with `cryptography` per test); headers are aiohttp's
case-insensitive multidicts, as the server sees them.
"""

from __future__ import annotations

import datetime as dt
import json

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from multidict import CIMultiDict, CIMultiDictProxy

from hub.visibility.access_review import decision_from_review, review_body
from hub.visibility.authentication import (
    UserInfo,
    bearer_token,
    certificate_user,
    front_proxy_user,
)
from hub.visibility.authorization import (
    NonResourceAttributes,
    ResourceAttributes,
    forbidden_message,
    request_attributes,
)
from hub.visibility.front_proxy import (
    AuthenticationConfigError,
    parse_authentication_configmap,
)
from hub.visibility.token_review import user_from_review

NOW = dt.datetime(2026, 6, 1, tzinfo=dt.UTC)
GROUP = "visibility.kueue.x-k8s.io"


class Authority:
    """A CA that signs client certificates."""

    def __init__(self, name: str) -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        self.cert = (
            x509.CertificateBuilder()
            .subject_name(self.name)
            .issuer_name(self.name)
            .public_key(self.key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(NOW - dt.timedelta(days=1))
            .not_valid_after(NOW + dt.timedelta(days=30))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(self.key, hashes.SHA256())
        )

    @property
    def pem(self) -> str:
        return self.cert.public_bytes(serialization.Encoding.PEM).decode()

    def client(
        self, cn: str, orgs: tuple[str, ...] = (), *, days: int = 10, start: int = -1
    ) -> x509.Certificate:
        attrs = [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
        attrs += [x509.NameAttribute(NameOID.ORGANIZATION_NAME, org) for org in orgs]
        key = ec.generate_private_key(ec.SECP256R1())
        return (
            x509.CertificateBuilder()
            .subject_name(x509.Name(attrs))
            .issuer_name(self.name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(NOW + dt.timedelta(days=start))
            .not_valid_after(NOW + dt.timedelta(days=start + days))
            .sign(self.key, hashes.SHA256())
        )


def der(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.DER)


def headers(*pairs: tuple[str, str]) -> CIMultiDictProxy[str]:
    return CIMultiDictProxy(CIMultiDict(pairs))


@pytest.fixture(scope="module")
def proxy_ca() -> Authority:
    return Authority("front-proxy-ca")


@pytest.fixture(scope="module")
def client_ca() -> Authority:
    return Authority("kubernetes-ca")


def configmap(proxy_ca: Authority, client_ca: Authority, **extra: str) -> dict[str, str]:
    data = {
        "client-ca-file": client_ca.pem,
        "requestheader-client-ca-file": proxy_ca.pem,
        "requestheader-allowed-names": '["front-proxy-client"]',
        "requestheader-username-headers": '["X-Remote-User"]',
        "requestheader-group-headers": '["X-Remote-Group"]',
        "requestheader-extra-headers-prefix": '["X-Remote-Extra-"]',
    }
    data.update(extra)
    return data


def test_configmap_gives_both_trust_anchors_and_the_header_names(
    proxy_ca: Authority, client_ca: Authority
) -> None:
    trust = parse_authentication_configmap(configmap(proxy_ca, client_ca))
    assert [c.subject for c in trust.client_ca] == [client_ca.cert.subject]
    assert trust.request_header is not None
    assert [c.subject for c in trust.request_header.ca] == [proxy_ca.cert.subject]
    assert trust.request_header.allowed_names == {"front-proxy-client"}
    assert trust.request_header.username_headers == ("X-Remote-User",)
    assert proxy_ca.pem.strip() in trust.ca_pem.decode()
    assert client_ca.pem.strip() in trust.ca_pem.decode()


def test_configmap_without_front_proxy_trusts_client_certificates_only(
    client_ca: Authority,
) -> None:
    trust = parse_authentication_configmap({"client-ca-file": client_ca.pem})
    assert trust.request_header is None
    assert len(trust.client_ca) == 1


def test_configmap_with_a_malformed_header_list_is_refused(
    proxy_ca: Authority, client_ca: Authority
) -> None:
    data = configmap(proxy_ca, client_ca, **{"requestheader-username-headers": "X-Remote-User"})
    with pytest.raises(AuthenticationConfigError, match="requestheader-username-headers"):
        parse_authentication_configmap(data)


def test_front_proxy_vouches_for_the_user_in_its_headers(
    proxy_ca: Authority, client_ca: Authority
) -> None:
    trust = parse_authentication_configmap(configmap(proxy_ca, client_ca))
    proxy = proxy_ca.client("front-proxy-client")
    user = certificate_user(
        der(proxy),
        headers(
            ("X-Remote-User", "alice"),
            ("X-Remote-Group", "team-a"),
            ("X-Remote-Group", "system:authenticated"),
            ("X-Remote-Extra-Scopes", "read"),
            ("x-remote-extra-Scopes", "write"),
            ("X-Remote-Extra-acme.com%2Fproject", "p1"),
        ),
        trust,
        NOW,
    )
    assert user == UserInfo(
        name="alice",
        groups=("team-a", "system:authenticated"),
        extra={"scopes": ("read", "write"), "acme.com/project": ("p1",)},
    )


def test_every_certificate_user_joins_system_authenticated_once(
    proxy_ca: Authority, client_ca: Authority
) -> None:
    trust = parse_authentication_configmap(configmap(proxy_ca, client_ca))
    proxy = der(proxy_ca.client("front-proxy-client"))
    aggregator = certificate_user(
        proxy,
        headers(("X-Remote-User", "system:kube-aggregator"), ("X-Remote-Group", "system:masters")),
        trust,
        NOW,
    )
    assert aggregator is not None
    assert aggregator.groups == ("system:masters", "system:authenticated")
    lone = certificate_user(proxy, headers(("X-Remote-User", "system:aggregator")), trust, NOW)
    assert lone is not None and lone.groups == ("system:authenticated",)


def test_proxy_certificate_with_another_name_is_not_the_proxy(
    proxy_ca: Authority, client_ca: Authority
) -> None:
    trust = parse_authentication_configmap(configmap(proxy_ca, client_ca))
    assert trust.request_header is not None
    impostor = proxy_ca.client("someone-else")
    found = front_proxy_user(
        impostor, headers(("X-Remote-User", "alice")), trust.request_header, NOW
    )
    assert found is None


def test_any_name_is_the_proxy_when_the_cluster_names_none(
    proxy_ca: Authority, client_ca: Authority
) -> None:
    trust = parse_authentication_configmap(
        configmap(proxy_ca, client_ca, **{"requestheader-allowed-names": ""})
    )
    assert trust.request_header is not None
    proxy = proxy_ca.client("anything")
    user = front_proxy_user(proxy, headers(("X-Remote-User", "bob")), trust.request_header, NOW)
    assert user is not None and user.name == "bob"


def test_remote_headers_mean_nothing_from_a_plain_client_certificate(
    proxy_ca: Authority, client_ca: Authority
) -> None:
    trust = parse_authentication_configmap(configmap(proxy_ca, client_ca))
    cert = client_ca.client("carol", ("devs",))
    user = certificate_user(der(cert), headers(("X-Remote-User", "root")), trust, NOW)
    assert user == UserInfo(name="carol", groups=("devs", "system:authenticated"))


@pytest.mark.parametrize(
    ("start", "days"),
    [pytest.param(-20, 5, id="expired"), pytest.param(2, 5, id="not-yet-valid")],
)
def test_certificates_outside_their_validity_are_refused(
    proxy_ca: Authority, client_ca: Authority, start: int, days: int
) -> None:
    trust = parse_authentication_configmap(configmap(proxy_ca, client_ca))
    proxy = proxy_ca.client("front-proxy-client", start=start, days=days)
    assert certificate_user(der(proxy), headers(("X-Remote-User", "a")), trust, NOW) is None


def test_a_certificate_from_an_unknown_ca_is_nobody(
    proxy_ca: Authority, client_ca: Authority
) -> None:
    trust = parse_authentication_configmap(configmap(proxy_ca, client_ca))
    stranger = Authority("kubernetes-ca")  # same name, other key: the signature decides
    cert = stranger.client("front-proxy-client", ("system:masters",))
    assert certificate_user(der(cert), headers(("X-Remote-User", "a")), trust, NOW) is None


def test_proxy_without_a_user_header_falls_back_to_nobody(
    proxy_ca: Authority, client_ca: Authority
) -> None:
    trust = parse_authentication_configmap(configmap(proxy_ca, client_ca))
    proxy = proxy_ca.client("front-proxy-client")
    assert certificate_user(der(proxy), headers(("X-Remote-Group", "g")), trust, NOW) is None


@pytest.mark.parametrize(
    ("header", "token"),
    [
        ("Bearer abc.def", "abc.def"),
        ("bearer   tok  ", "tok"),
        ("Basic dXNlcjpwYXNz", None),
        ("Bearer ", None),
        (None, None),
    ],
)
def test_bearer_token_is_read_from_the_authorization_header(
    header: str | None, token: str | None
) -> None:
    assert bearer_token(header) == token


def test_token_review_answer_becomes_a_user() -> None:
    review = {
        "status": {
            "authenticated": True,
            "user": {
                "username": "system:serviceaccount:ns:viewer",
                "uid": "u-1",
                "groups": ["system:serviceaccounts", "system:authenticated"],
                "extra": {"authentication.kubernetes.io/pod-name": ["p"]},
            },
        }
    }
    assert user_from_review(review) == UserInfo(
        name="system:serviceaccount:ns:viewer",
        uid="u-1",
        groups=("system:serviceaccounts", "system:authenticated"),
        extra={"authentication.kubernetes.io/pod-name": ("p",)},
    )
    assert user_from_review({"status": {"authenticated": False, "error": "bad"}}) is None


def test_queue_paths_are_resource_requests_and_the_rest_non_resource() -> None:
    cq = request_attributes("GET", f"/apis/{GROUP}/v1beta2/clusterqueues/cq-1/pendingworkloads")
    assert cq == ResourceAttributes(
        verb="get",
        group=GROUP,
        version="v1beta2",
        resource="clusterqueues",
        subresource="pendingworkloads",
        name="cq-1",
    )
    lq = request_attributes(
        "GET", f"/apis/{GROUP}/v1beta1/namespaces/team/localqueues/main/pendingworkloads"
    )
    assert isinstance(lq, ResourceAttributes)
    assert (lq.resource, lq.namespace, lq.name, lq.version) == (
        "localqueues",
        "team",
        "main",
        "v1beta1",
    )
    assert request_attributes("GET", f"/apis/{GROUP}/v1beta2") == NonResourceAttributes(
        verb="get", path=f"/apis/{GROUP}/v1beta2"
    )
    assert request_attributes("GET", "/metrics") == NonResourceAttributes("get", "/metrics")


def test_access_review_carries_the_user_and_the_attributes() -> None:
    user = UserInfo(name="bob", uid="7", groups=("devs",), extra={"k": ("v",)})
    attrs = request_attributes("GET", f"/apis/{GROUP}/v1beta2/clusterqueues/cq/pendingworkloads")
    body = review_body(user, attrs)
    assert body["kind"] == "SubjectAccessReview"
    assert body["spec"] == {
        "user": "bob",
        "groups": ["devs"],
        "uid": "7",
        "extra": {"k": ["v"]},
        "resourceAttributes": {
            "verb": "get",
            "group": GROUP,
            "version": "v1beta2",
            "resource": "clusterqueues",
            "subresource": "pendingworkloads",
            "name": "cq",
        },
    }
    non_resource = review_body(UserInfo(name="p"), NonResourceAttributes("get", "/metrics"))
    assert non_resource["spec"]["nonResourceAttributes"] == {"verb": "get", "path": "/metrics"}
    assert json.dumps(body)  # plain JSON, ready to send


@pytest.mark.parametrize(
    ("status", "allowed"),
    [
        ({"allowed": True}, True),
        ({"allowed": False}, False),
        ({"allowed": True, "denied": True}, False),
        ({}, False),
    ],
)
def test_only_an_explicit_allow_allows(status: dict[str, bool], allowed: bool) -> None:
    assert decision_from_review({"status": status}).allowed is allowed


def test_forbidden_messages_read_like_the_apiservers() -> None:
    bob = UserInfo(name="bob")
    cq = request_attributes("GET", f"/apis/{GROUP}/v1beta2/clusterqueues/cq/pendingworkloads")
    assert forbidden_message(bob, cq, "") == (
        f'clusterqueues.{GROUP} "cq" is forbidden: User "bob" cannot get resource '
        f'"clusterqueues/pendingworkloads" in API group "{GROUP}" at the cluster scope'
    )
    lq = request_attributes(
        "GET", f"/apis/{GROUP}/v1beta2/namespaces/team/localqueues/main/pendingworkloads"
    )
    assert forbidden_message(bob, lq, "no RBAC policy matched").endswith(
        'in the namespace "team": no RBAC policy matched'
    )
    path = NonResourceAttributes("get", "/metrics")
    assert forbidden_message(bob, path, "") == 'forbidden: User "bob" cannot get path "/metrics"'
