"""Security: listeners' protocols, TLS, SASL, principals (authorization is ``broker/acl``).

Map (what lives where):

    listeners.py           listener.security.protocol.map, the inter-broker and control-plane
                           listeners, ListenerSecurity (one accepting listener's protocol,
                           TLS context, SASL settings, principal mapper), and the
                           ClientSecurity the broker's own connections use
    tls.py                 SSLContexts from Kafka's ssl.* keys (PEM; PKCS12 via openssl)
    tls_stream.py          TLS on an accepted connection over memory BIOs (any event loop;
                           every failed handshake logged)
    principal.py           the principal of a TLS peer: RFC 2253 subject,
                           ssl.principal.mapping.rules
    sasl_server.py         SaslAuthenticator: SaslHandshake / SaslAuthenticate states, PLAIN
                           against JAAS users, SCRAM against stored credentials, KIP-368
    scram_credentials.py   SCRAM credentials in ZooKeeper (/config/users/<user>), read per
                           authentication; AlterUserScramCredentials' writes
    reconfigure.py         certificate rotation without a restart: a listener's keystore
                           and truststore as dynamic broker configs

The connection (``broker/network/connection.py``) owns one SaslAuthenticator and the
principal; the server (``broker/server.py``) runs the TLS handshake before the
connection exists. Handlers see ``ctx.connection.principal`` through
``broker.acl.authorizer.principal_of``. A new mechanism is a branch in
``SaslAuthenticator.authenticate`` with its sans-I/O exchange in ``protocol/``.
"""
