package io.kvrouter.cluster;

import io.kvrouter.cluster.admission.ModelClient;
import static org.awaitility.Awaitility.await;

import com.typesafe.config.ConfigFactory;
import io.kvrouter.core.admission.Clock;
import io.kvrouter.core.admission.ModelSnapshot;
import io.kvrouter.core.model.WorkerConfig;
import io.kvrouter.core.model.WorkerRole;
import io.kvrouter.cluster.testkit.AdmissionProbes;
import io.kvrouter.core.selection.SelectionRequest;
import io.kvrouter.core.selection.SelectionResult;
import java.time.Duration;
import java.util.Map;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Join;

/** A one-node cluster that joined itself, with the routing layer started on it. */
final class TestCluster implements AutoCloseable {
  static final Duration TIMEOUT = Duration.ofSeconds(5);

  final ActorTestKit kit;
  final RouterCluster routing;

  private TestCluster(ActorTestKit kit, RouterCluster routing) {
    this.kit = kit;
    this.routing = routing;
  }

  static TestCluster start(Clock clock) {
    return start(clock, "");
  }

  static TestCluster start(Clock clock, String config) {
    return start(clock, config, AdmissionProbes.selectOnActor(clock));
  }

  /** Admission actors run under {@code decorator}: tests can select on the actor (and hold Books) through it. */
  static TestCluster start(Clock clock, String config, RouterCluster.AdmissionDecorator decorator) {
    ActorTestKit kit = ActorTestKit.create("kvrouter-test",
        ConfigFactory.parseString(config).withFallback(ConfigFactory.load()));
    Cluster cluster = Cluster.get(kit.system());
    cluster.manager().tell(Join.create(cluster.selfMember().address()));
    await().atMost(Duration.ofSeconds(15)).until(() -> cluster.selfMember().status() == MemberStatus.up());
    return new TestCluster(kit, RouterCluster.init(kit.system(), clock, decorator));
  }

  ModelClient client(String model) {
    return routing.client(model);
  }

  /** The admission actor's advisory pick, through its mailbox. */
  SelectionResult selectOnActor(SelectionRequest request) {
    return join(AdmissionProbes.selectOnActor(kit.system(), request, TIMEOUT));
  }

  static WorkerConfig worker(String id) {
    return new WorkerConfig(id, 0, 1, 8192, 1000, 16, "http://" + id, "local", WorkerRole.AGGREGATED);
  }

  ModelClient modelWithWorkers(String model, String policy, String... workers) {
    for (String id : workers) {
      join(client(model).register(worker(id), null));
    }
    // the facade of a registered model (before, client(model) hands out a throwaway one)
    ModelClient client = client(model);
    join(client.setPolicy(policy, Map.of("seed", "11"), null));
    return client;
  }

  ModelSnapshot state(ModelClient client) {
    return join(client.snapshot(null));
  }

  static <T> T join(java.util.concurrent.CompletionStage<T> stage) {
    try {
      return stage.toCompletableFuture().get(TIMEOUT.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }

  @Override
  public void close() {
    kit.shutdownTestKit();
  }
}
