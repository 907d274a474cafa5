package io.kvrouter.api;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.spec.InvalidKeySpecException;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.Base64;
import java.util.Collection;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/**
 * TLS material from PEM files, the one loader of the router's gRPC server (both bindings) and of the CLI: a
 * certificate chain with its unencrypted PKCS#8 private key ({@code -----BEGIN PRIVATE KEY-----}, RSA or EC), and CA
 * certificates to trust. {@code openssl pkcs8 -topk8 -nocrypt} converts other key formats.
 */
public final class PemTls {
  private static final Pattern PRIVATE_KEY =
      Pattern.compile("-----BEGIN PRIVATE KEY-----([A-Za-z0-9+/=\\s]+)-----END PRIVATE KEY-----");
  private static final char[] NO_PASSWORD = new char[0];

  private PemTls() {}

  /** Key managers presenting the chain in {@code certChainPem} (leaf first) with the key in {@code keyPem}. */
  public static KeyManagerFactory keyManagers(Path certChainPem, Path keyPem) {
    try {
      KeyStore store = emptyStore();
      store.setKeyEntry("key", privateKey(keyPem), NO_PASSWORD,
          certificates(certChainPem).toArray(Certificate[]::new));
      KeyManagerFactory factory = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
      factory.init(store, NO_PASSWORD);
      return factory;
    } catch (GeneralSecurityException e) {
      throw new IllegalArgumentException("cannot use the key of " + keyPem + " with " + certChainPem + ": " + e, e);
    }
  }

  /** Trust managers trusting the certificates in {@code caPem}. */
  public static TrustManagerFactory trustManagers(Path caPem) {
    try {
      KeyStore store = emptyStore();
      int i = 0;
      for (Certificate certificate : certificates(caPem)) {
        store.setCertificateEntry("ca-" + i++, certificate);
      }
      TrustManagerFactory factory = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
      factory.init(store);
      return factory;
    } catch (GeneralSecurityException e) {
      throw new IllegalArgumentException("cannot trust the certificates of " + caPem + ": " + e, e);
    }
  }

  /**
   * A TLS context: with {@code keys} it presents them (a server; a client with a certificate), with {@code trust}
   * it trusts only those CAs (else the JDK's default trust store).
   */
  public static SSLContext context(KeyManagerFactory keys, TrustManagerFactory trust) {
    try {
      SSLContext context = SSLContext.getInstance("TLS");
      context.init(keys == null ? null : keys.getKeyManagers(), trust == null ? null : trust.getTrustManagers(),
          null);
      return context;
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("cannot create a TLS context", e);
    }
  }

  static List<Certificate> certificates(Path pem) {
    try (InputStream in = Files.newInputStream(pem)) {
      Collection<? extends Certificate> read = CertificateFactory.getInstance("X.509").generateCertificates(in);
      if (read.isEmpty()) {
        throw new IllegalArgumentException("no certificate in " + pem);
      }
      return List.copyOf(read);
    } catch (IOException | GeneralSecurityException e) {
      throw new IllegalArgumentException("cannot read certificates from " + pem + ": " + e.getMessage(), e);
    }
  }

  static PrivateKey privateKey(Path pem) {
    String text;
    try {
      text = Files.readString(pem, StandardCharsets.US_ASCII);
    } catch (IOException e) {
      throw new IllegalArgumentException("cannot read the private key " + pem + ": " + e.getMessage(), e);
    }
    Matcher matcher = PRIVATE_KEY.matcher(text);
    if (!matcher.find()) {
      throw new IllegalArgumentException(pem + " holds no unencrypted PKCS#8 key (-----BEGIN PRIVATE KEY-----)");
    }
    PKCS8EncodedKeySpec spec = new PKCS8EncodedKeySpec(Base64.getMimeDecoder().decode(matcher.group(1)));
    for (String algorithm : List.of("RSA", "EC", "Ed25519")) {
      try {
        return KeyFactory.getInstance(algorithm).generatePrivate(spec);
      } catch (InvalidKeySpecException | java.security.NoSuchAlgorithmException wrongAlgorithm) {
        // try the next
      }
    }
    throw new IllegalArgumentException(pem + " holds a key that is neither RSA, EC nor Ed25519");
  }

  private static KeyStore emptyStore() throws GeneralSecurityException {
    KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
    try {
      store.load(null, null);
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
    return store;
  }
}
