"""ssl.principal.mapping.rules and the certificate DN, as Kafka's SslPrincipalMapper."""

from __future__ import annotations

import pytest

from broker.security.principal import ANONYMOUS, NoMatchingRule, PrincipalMapper, rfc2253

SUBJECT = ((("countryName", "US"),), (("organizationName", "Example"),),
           (("organizationalUnitName", "eng"),), (("commonName", "alice"),))


def test_dn_is_rfc2253_in_reverse_encoding_order() -> None:
    assert rfc2253(SUBJECT) == "CN=alice,OU=eng,O=Example,C=US"


def test_special_characters_are_escaped() -> None:
    assert rfc2253(((("commonName", 'a,b+c"d'),),)) == 'CN=a\\,b\\+c\\"d'
    assert rfc2253(((("commonName", " lead"),),)) == "CN=\\ lead"


def test_default_rule_gives_the_whole_dn() -> None:
    assert PrincipalMapper("DEFAULT").principal({"subject": SUBJECT}) == \
        "User:CN=alice,OU=eng,O=Example,C=US"


def test_first_matching_rule_wins_with_case_change() -> None:
    m = PrincipalMapper("RULE:^CN=(.*?),OU=(.*?),O=(.*?),C=(.*?)$/$1@$2/U, "
                        "RULE:^CN=(.*?),.*$/$1/, DEFAULT")
    assert m.name("CN=alice,OU=eng,O=Example,C=US") == "ALICE@ENG"
    assert m.name("CN=bob,O=x") == "bob"
    assert m.name("O=only") == "O=only"


def test_no_matching_rule_is_refused() -> None:
    m = PrincipalMapper("RULE:^CN=(.*?),.*$/$1/L")
    with pytest.raises(NoMatchingRule):
        m.name("O=x")


def test_a_client_without_certificate_is_anonymous() -> None:
    assert PrincipalMapper().principal(None) == ANONYMOUS
    assert PrincipalMapper().principal({}) == ANONYMOUS


@pytest.mark.parametrize("rules", ["RULE:^CN=(.*$/$1/", "garbage", "RULE:a/b/X"])
def test_bad_rules_name_the_key(rules: str) -> None:
    with pytest.raises(ValueError, match="ssl.principal.mapping.rules"):
        PrincipalMapper(rules)
