package io.kvrouter.sim.driver;

import com.typesafe.config.ConfigFactory;
import io.kvrouter.api.v1.AdminClient;
import io.kvrouter.api.v1.RouterClient;
import io.kvrouter.api.v1.WorkersClient;
import java.time.Duration;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.grpc.GrpcClientSettings;

/** router-api's gRPC clients to one router, used one call at a time (each call awaited before the next). */
public final class RouterClients implements AutoCloseable {
  private static final Duration CALL_TIMEOUT = Duration.ofSeconds(30);
  private static final Duration PATIENT_TIMEOUT = Duration.ofHours(1);

  public final RouterClient router;
  /**
   * The Router client for Books that may wait in the admission queue: its deadline (an hour) bounds the wait on the
   * router's clock too, which in virtual time is the simulation's.
   */
  public final RouterClient patientRouter;
  public final WorkersClient workers;
  public final AdminClient admin;
  private final ActorSystem<?> ownedSystem;

  private RouterClients(String host, int port, ActorSystem<?> system, ActorSystem<?> ownedSystem) {
    GrpcClientSettings settings = GrpcClientSettings.connectToServiceAt(host, port, system)
        .withTls(false)
        .withDeadline(CALL_TIMEOUT);
    this.router = RouterClient.create(settings, system);
    this.patientRouter = RouterClient.create(settings.withDeadline(PATIENT_TIMEOUT), system);
    this.workers = WorkersClient.create(settings, system);
    this.admin = AdminClient.create(settings, system);
    this.ownedSystem = ownedSystem;
  }

  /** Clients on an existing actor system (the in-process router's). */
  public static RouterClients using(String host, int port, ActorSystem<?> system) {
    return new RouterClients(host, port, system, null);
  }

  /** Clients on an actor system of their own: a local one, whatever application.conf is on the classpath. */
  public static RouterClients connect(String host, int port) {
    ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), "sim-client",
        ConfigFactory.parseString("pekko.actor.provider = local\npekko.loglevel = WARNING")
            .withFallback(ConfigFactory.defaultReference()));
    return new RouterClients(host, port, system, system);
  }

  /** Waits for a call's answer; a gRPC failure is rethrown as its StatusRuntimeException. */
  public static <T> T await(CompletionStage<T> call) {
    try {
      return call.toCompletableFuture().get(CALL_TIMEOUT.toSeconds() + 5, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof RuntimeException runtime) {
        throw runtime;
      }
      throw new IllegalStateException(e.getCause());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    } catch (TimeoutException e) {
      throw new IllegalStateException("no answer from the router within " + CALL_TIMEOUT, e);
    }
  }

  @Override
  public void close() {
    router.close();
    patientRouter.close();
    workers.close();
    admin.close();
    if (ownedSystem != null) {
      ownedSystem.terminate();
    }
  }
}
