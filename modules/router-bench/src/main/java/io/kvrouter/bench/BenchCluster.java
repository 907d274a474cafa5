package io.kvrouter.bench;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.kvrouter.cluster.admission.AdmissionConfig;
import io.kvrouter.cluster.RouterCluster;
import io.kvrouter.cluster.admission.ModelClient;
import io.kvrouter.core.admission.Clock;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.sharding.typed.ClusterShardingSettings;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.sharding.typed.javadsl.Entity;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityRef;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityTypeKey;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Join;

/**
 * A real one-node cluster on loopback (artery on an ephemeral port, joined to itself) with the routing layer and a
 * bench-local trivial entity type started on sharding.
 */
final class BenchCluster implements AutoCloseable {
  static final Duration TIMEOUT = Duration.ofSeconds(10);

  /** A trivial entity's only message: it answers at once. */
  record Ping(ActorRef<Pong> replyTo) {}

  /** The answer names the entity, so a caller on its node can then ask it without the region (as Books do). */
  record Pong(ActorRef<Ping> from) {}

  static final EntityTypeKey<Ping> ECHO_KEY = EntityTypeKey.create(Ping.class, "BenchEcho");

  /**
   * The counting mailbox as the admission dispatcher's {@code mailbox-type}. Typed actors spawned with the default
   * mailbox selector get {@code pekko.actor.typed.default-mailbox} set on their props, which wins over a dispatcher's
   * {@code mailbox-type}; so the two sharded entity types also get it through deployment config (which wins over
   * props). {@link AdmissionBench} checks that the admission entity really got it. The production config makes the
   * admission dispatcher an alias of the default one, which has no mailbox of its own to replace: here it is a
   * dispatcher of its own, sized as the production pool (threads = cores).
   */
  static final String COUNTING_MAILBOX_CONFIG = "kvrouter.bench.counting-admission {\n"
      + "  type = Dispatcher\n"
      + "  executor = \"fork-join-executor\"\n"
      + "  throughput = 5\n"
      + "  fork-join-executor { parallelism-min = 2, parallelism-factor = 1.0, parallelism-max = 64 }\n"
      + "  mailbox-type = \"" + CountingMailbox.class.getName() + "\"\n"
      + "}\n"
      + AdmissionConfig.DISPATCHER + " = \"kvrouter.bench.counting-admission\"\n"
      + "kvrouter.bench.counting-mailbox.mailbox-type = \"" + CountingMailbox.class.getName() + "\"\n"
      + "pekko.actor.deployment {\n"
      + "  \"/sharding/ModelAdmission/*/*\".mailbox = kvrouter.bench.counting-mailbox\n"
      + "  \"/sharding/BenchEcho/*/*\".mailbox = kvrouter.bench.counting-mailbox\n"
      + "}\n";

  final ActorSystem<Void> system;
  final RouterCluster routing;
  private final ClusterSharding sharding;

  private BenchCluster(ActorSystem<Void> system, RouterCluster routing) {
    this.system = system;
    this.routing = routing;
    this.sharding = ClusterSharding.get(system);
  }

  /** @param countingMailbox put {@link CountingMailbox} on the admission dispatcher */
  static BenchCluster start(String name, boolean countingMailbox) {
    return start(name, countingMailbox, RouterCluster.AdmissionDecorator.NONE);
  }

  /** @param admission wraps each admission actor (the advisory bench's select-on-actor probe) */
  static BenchCluster start(String name, boolean countingMailbox, RouterCluster.AdmissionDecorator admission) {
    String overrides = """
        pekko.actor.provider = cluster
        pekko.remote.artery.canonical.hostname = "127.0.0.1"
        pekko.remote.artery.canonical.port = 0
        pekko.loglevel = WARNING
        pekko.loggers = ["org.apache.pekko.event.Logging$DefaultLogger"]
        pekko.logging-filter = "org.apache.pekko.event.DefaultLoggingFilter"
        pekko.stdout-loglevel = WARNING
        pekko.log-dead-letters = off
        pekko.cluster.jmx.enabled = off
        pekko.cluster.log-info = off
        pekko.coordinated-shutdown.exit-jvm = off
        pekko.coordinated-shutdown.run-by-jvm-shutdown-hook = off
        """ + (countingMailbox ? COUNTING_MAILBOX_CONFIG : "");
    Config config = ConfigFactory.parseString(overrides).withFallback(ConfigFactory.load());
    ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), name, config);
    try {
      Cluster cluster = Cluster.get(system);
      cluster.manager().tell(Join.create(cluster.selfMember().address()));
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
      while (cluster.selfMember().status() != MemberStatus.up()) {
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException("the one-node cluster did not come up in 20 s");
        }
        Thread.sleep(20);
      }
      RouterCluster routing = RouterCluster.init(system, Clock.SYSTEM, admission);
      ClusterSharding.get(system).init(Entity.of(ECHO_KEY, ctx -> Behaviors.<Ping>setup(self -> {
            Pong pong = new Pong(self.getSelf());
            return Behaviors.receive(Ping.class)
                .onMessage(Ping.class, ping -> {
                  ping.replyTo().tell(pong);
                  return Behaviors.same();
                }).build();
          }))
          .withSettings(ClusterShardingSettings.create(system).withNoPassivationStrategy())
          .withEntityProps(DispatcherSelector.fromConfig(AdmissionConfig.DISPATCHER)));
      return new BenchCluster(system, routing);
    } catch (InterruptedException e) {
      system.terminate();
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    } catch (RuntimeException e) {
      system.terminate();
      throw e;
    }
  }

  /** A model with {@code workers} workers of {@link Fixtures#worker} under {@code policy}. */
  ModelClient model(String model, int workers, String policy) {
    for (int i = 0; i < workers; i++) {
      join(routing.client(model).register(Fixtures.worker(Fixtures.workerId(i)), null));
    }
    ModelClient client = routing.client(model); // registered: the node's facade of the model
    join(client.setPolicy(policy, Map.of(), null));
    return client;
  }

  EntityRef<Ping> echo(String id) {
    return sharding.entityRefFor(ECHO_KEY, id);
  }

  static <T> T join(CompletionStage<T> stage) {
    try {
      return stage.toCompletableFuture().get(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  @Override
  public void close() {
    system.terminate();
    try {
      system.getWhenTerminated().toCompletableFuture().get(20, TimeUnit.SECONDS);
    } catch (Exception e) {
      Progress.line("cluster", "actor system did not terminate cleanly: %s", e);
    }
  }
}
