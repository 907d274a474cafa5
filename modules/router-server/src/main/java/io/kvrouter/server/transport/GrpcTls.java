package io.kvrouter.server.transport;

import com.typesafe.config.Config;
import io.grpc.netty.shaded.io.grpc.netty.GrpcSslContexts;
import io.grpc.netty.shaded.io.netty.handler.ssl.ClientAuth;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContext;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContextBuilder;
import io.kvrouter.api.PemTls;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLException;
import javax.net.ssl.TrustManagerFactory;

/**
 * {@code kvrouter.grpc.tls}: the gRPC port's certificate chain and key (PEM files), and optionally the CA that
 * client certificates must be signed by (then a client without such a certificate fails the handshake). The files
 * are read once, at startup, by {@link PemTls} for either binding.
 */
record GrpcTls(Path certChain, Path privateKey, Optional<Path> clientCa) {

  GrpcTls {
    for (Path file : clientCa.map(ca -> new Path[] {certChain, privateKey, ca})
        .orElse(new Path[] {certChain, privateKey})) {
      if (!Files.isReadable(file)) {
        throw new IllegalArgumentException("kvrouter.grpc.tls: cannot read " + file);
      }
    }
  }

  /** Empty when {@code kvrouter.grpc.tls.enabled} is off (plaintext). */
  static Optional<GrpcTls> fromConfig(Config grpc) {
    Config tls = grpc.getConfig("tls");
    if (!tls.getBoolean("enabled")) {
      return Optional.empty();
    }
    String clientCa = tls.getString("client-ca-file");
    return Optional.of(new GrpcTls(Path.of(tls.getString("cert-chain-file")), Path.of(tls.getString("private-key-file")),
        clientCa.isBlank() ? Optional.empty() : Optional.of(Path.of(clientCa))));
  }

  private KeyManagerFactory keys() {
    return PemTls.keyManagers(certChain, privateKey);
  }

  private Optional<TrustManagerFactory> clientTrust() {
    return clientCa.map(PemTls::trustManagers);
  }

  /** For the NETTY binding: grpc-java's HTTP/2 settings (ALPN h2, ciphers) over our key and client CA. */
  SslContext nettyContext() {
    SslContextBuilder builder = GrpcSslContexts.configure(SslContextBuilder.forServer(keys()));
    clientTrust().ifPresent(trust -> builder.trustManager(trust).clientAuth(ClientAuth.REQUIRE));
    try {
      return builder.build();
    } catch (SSLException e) {
      throw new IllegalArgumentException("kvrouter.grpc.tls: " + e.getMessage(), e);
    }
  }

  /** For the PEKKO binding: a server engine per connection (pekko-http adds ALPN for HTTP/2). */
  org.apache.pekko.japi.function.Creator<SSLEngine> pekkoEngines() {
    var context = PemTls.context(keys(), clientTrust().orElse(null));
    boolean verifyClients = clientCa.isPresent();
    return () -> {
      SSLEngine engine = context.createSSLEngine();
      engine.setUseClientMode(false);
      engine.setNeedClientAuth(verifyClients);
      return engine;
    };
  }
}
