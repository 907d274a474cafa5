package io.kvrouter.cli;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.grpc.CallCredentials;
import io.grpc.Metadata;
import io.kvrouter.api.BearerToken;
import io.kvrouter.api.PemTls;
import io.kvrouter.api.v1.AdminClient;
import io.kvrouter.api.v1.RouterClient;
import io.kvrouter.api.v1.WorkersClient;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.grpc.GrpcClientSettings;

/**
 * One CLI invocation's connection: a quiet local ActorSystem (config {@code kvrouter-cli.conf}, not
 * {@code application.conf}, so the CLI never picks up or shadows a server's configuration on a shared classpath)
 * and lazily created clients with a per-call deadline, plaintext or TLS, with a bearer token if given. Closing
 * terminates the ActorSystem.
 */
final class CliSession implements AutoCloseable {

  private static final Duration TERMINATE_WAIT = Duration.ofSeconds(10);

  private final ActorSystem system;
  private final GrpcClientSettings settings;
  private final Duration deadline;
  private final Security security;
  private final String target;
  private RouterClient router;
  /** Router clients of other nodes ({@link #router(String)}), by host:port. */
  private final Map<String, RouterClient> routersOf = new HashMap<>();
  private WorkersClient workers;
  private AdminClient admin;

  /**
   * How the CLI authenticates: a bearer token (or null), TLS, trusting {@code caFile}'s CAs (null: the JDK's), with a
   * client certificate when {@code certFile} and {@code keyFile} are given.
   */
  record Security(String token, boolean tls, Path caFile, Path certFile, Path keyFile) {
    GrpcClientSettings applyTo(GrpcClientSettings settings) {
      GrpcClientSettings secured = tls
          ? settings.withTls(true).withSslContext(PemTls.context(
              certFile == null ? null : PemTls.keyManagers(certFile, keyFile),
              caFile == null ? null : PemTls.trustManagers(caFile)))
          : settings.withTls(false);
      return token == null ? secured : secured.withCallCredentials(new Bearer(token));
    }
  }

  /** Sends {@code authorization: Bearer <token>} with every call. */
  private static final class Bearer extends CallCredentials {
    private final Metadata headers = new Metadata();

    Bearer(String token) {
      headers.put(BearerToken.KEY, BearerToken.headerValue(token));
    }

    @Override
    public void applyRequestMetadata(RequestInfo requestInfo, Executor appExecutor, MetadataApplier applier) {
      applier.apply(headers);
    }
  }

  CliSession(Args.Target target, Duration deadline, Security security) {
    Config config = ConfigFactory.load("kvrouter-cli");
    this.system = ActorSystem.create("kvrouter-cli", config);
    this.deadline = deadline;
    this.security = security;
    this.target = target.host() + ":" + target.port();
    try {
      this.settings = settingsFor(target);
    } catch (RuntimeException e) {
      terminate();
      throw e;
    }
  }

  private GrpcClientSettings settingsFor(Args.Target target) {
    return security.applyTo(GrpcClientSettings.connectToServiceAt(target.host(), target.port(), system)
        .withDeadline(deadline));
  }

  /** The target as {@code host:port}, as an answer's endpoint names a node. */
  String target() {
    return target;
  }

  RouterClient router() {
    if (router == null) {
      router = RouterClient.create(settings, system);
    }
    return router;
  }

  /**
   * A Router client of another node ({@code endpoint} host:port, e.g. a model's owner named in an answer), with the
   * same deadline, TLS and token as the target's.
   */
  RouterClient router(String endpoint) {
    return routersOf.computeIfAbsent(endpoint,
        e -> RouterClient.create(settingsFor(Args.parseTarget(e)), system));
  }

  WorkersClient workers() {
    if (workers == null) {
      workers = WorkersClient.create(settings, system);
    }
    return workers;
  }

  AdminClient admin() {
    if (admin == null) {
      admin = AdminClient.create(settings, system);
    }
    return admin;
  }

  @Override
  public void close() {
    // Terminating the system closes the clients too (they close on the system's termination).
    terminate();
  }

  private void terminate() {
    try {
      system.terminate();
      system.getWhenTerminated().toCompletableFuture().get(TERMINATE_WAIT.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (Exception ignored) {
      // best effort: the process is about to exit anyway
    }
  }
}
