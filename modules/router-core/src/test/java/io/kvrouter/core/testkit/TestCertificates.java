package io.kvrouter.core.testkit;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * TLS material made at test time with the JDK's {@code keytool} (no private key is committed), in a fresh temporary
 * directory: a CA, a server certificate it signed for 127.0.0.1 and localhost, a client certificate it signed, and a
 * client certificate signed by another CA (one the server does not trust). Certificates and keys as PEM (the
 * router's and the CLI's format), and the server's key and the CA as PKCS#12 stores (Pekko remoting's format).
 * EC P-256 keys, valid for two days.
 */
public final class TestCertificates {
  public static final String STORE_PASSWORD = "changeit";
  private static TestCertificates shared;

  public final Path dir;
  /** The CA certificate (PEM), to trust. */
  public final Path ca;
  public final Path serverChain;
  public final Path serverKey;
  public final Path clientChain;
  public final Path clientKey;
  /** A client certificate and key under a CA the server does not trust. */
  public final Path strangerChain;
  public final Path strangerKey;
  /** The server's key with its chain; a store of only the CA certificate (PKCS#12, {@link #STORE_PASSWORD}). */
  public final Path serverKeyStore;
  public final Path trustStore;

  private TestCertificates(Path dir) throws IOException {
    this.dir = dir;
    ca = dir.resolve("ca.pem");
    serverChain = dir.resolve("server-chain.pem");
    serverKey = dir.resolve("server-key.pem");
    clientChain = dir.resolve("client-chain.pem");
    clientKey = dir.resolve("client-key.pem");
    strangerChain = dir.resolve("stranger-chain.pem");
    strangerKey = dir.resolve("stranger-key.pem");
    serverKeyStore = dir.resolve("server.p12");
    trustStore = dir.resolve("trust.p12");

    authority("ca");
    authority("other-ca");
    exportCertificate("ca", "ca.p12", ca);
    exportCertificate("ca", "other-ca.p12", dir.resolve("other-ca.pem"));
    leaf("server", "ca", "SAN=ip:127.0.0.1,dns:localhost", serverChain, serverKey);
    leaf("client", "ca", "SAN=dns:client", clientChain, clientKey);
    leaf("stranger", "other-ca", "SAN=dns:stranger", strangerChain, strangerKey);
    // the server's store holds its key with the CA-signed chain, as remoting's key store wants it
    keytool("-importcert", "-noprompt", "-alias", "ca", "-file", ca.toString(), "-keystore", "server.p12");
    keytool("-importcert", "-noprompt", "-alias", "leaf", "-file", serverChain.toString(), "-keystore", "server.p12");
    keytool("-importcert", "-noprompt", "-alias", "ca", "-file", ca.toString(), "-keystore", "trust.p12");
  }

  /** One set per JVM (keytool is slow to start), made on first use. */
  public static synchronized TestCertificates shared() {
    if (shared == null) {
      try {
        shared = new TestCertificates(Files.createTempDirectory("kvrouter-tls"));
      } catch (IOException e) {
        throw new IllegalStateException("cannot make test certificates", e);
      }
    }
    return shared;
  }

  /**
   * A router's {@code kvrouter.grpc.tls} with this server certificate, verifying client certificates against the CA
   * when {@code verifyClients}.
   */
  public String routerTlsConfig(boolean verifyClients) {
    return """
        kvrouter.grpc.tls {
          enabled = on
          cert-chain-file = "%s"
          private-key-file = "%s"
          client-ca-file = "%s"
        }
        """.formatted(serverChain, serverKey, verifyClients ? ca : "");
  }

  private void authority(String name) throws IOException {
    keytool("-genkeypair", "-alias", "ca", "-keyalg", "EC", "-groupname", "secp256r1", "-dname",
        "CN=kvrouter-test-" + name, "-ext", "bc:c", "-validity", "2", "-keystore", name + ".p12");
  }

  private void exportCertificate(String alias, String store, Path pem) throws IOException {
    keytool("-exportcert", "-rfc", "-alias", alias, "-keystore", store, "-file", pem.toString());
  }

  /** A key pair {@code name}, its certificate signed by the CA in {@code ca}.p12; chain and key written as PEM. */
  private void leaf(String name, String ca, String san, Path chain, Path key) throws IOException {
    String store = name + ".p12";
    keytool("-genkeypair", "-alias", "leaf", "-keyalg", "EC", "-groupname", "secp256r1", "-dname", "CN=" + name,
        "-validity", "2", "-keystore", store);
    keytool("-certreq", "-alias", "leaf", "-keystore", store, "-file", name + ".csr");
    Path signed = dir.resolve(name + ".pem");
    keytool("-gencert", "-rfc", "-alias", "ca", "-keystore", ca + ".p12", "-infile", name + ".csr", "-outfile",
        signed.toString(), "-validity", "2", "-ext", san, "-ext", "EKU=serverAuth,clientAuth");
    Files.writeString(chain, Files.readString(signed) + Files.readString(dir.resolve(ca + ".pem")));
    Files.writeString(key, pkcs8Pem(dir.resolve(store)));
  }

  private static String pkcs8Pem(Path store) throws IOException {
    try (InputStream in = Files.newInputStream(store)) {
      KeyStore keys = KeyStore.getInstance("PKCS12");
      keys.load(in, STORE_PASSWORD.toCharArray());
      byte[] der = keys.getKey("leaf", STORE_PASSWORD.toCharArray()).getEncoded();
      return "-----BEGIN PRIVATE KEY-----\n"
          + Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII)).encodeToString(der)
          + "\n-----END PRIVATE KEY-----\n";
    } catch (java.security.GeneralSecurityException e) {
      throw new IOException(e);
    }
  }

  private void keytool(String... args) throws IOException {
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "keytool").toString());
    command.addAll(List.of(args));
    command.addAll(List.of("-storetype", "PKCS12", "-storepass", STORE_PASSWORD));
    Process process = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true).start();
    try {
      if (!process.waitFor(60, TimeUnit.SECONDS)) {
        process.destroyForcibly();
        throw new IOException("keytool did not finish: " + command);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException(e);
    }
    String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (process.exitValue() != 0) {
      throw new IOException("keytool failed: " + command + "\n" + output);
    }
  }
}
