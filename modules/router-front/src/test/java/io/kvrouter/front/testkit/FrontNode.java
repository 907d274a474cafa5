package io.kvrouter.front.testkit;

import static org.awaitility.Awaitility.await;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.kvrouter.cluster.RouterCluster;
import io.kvrouter.cluster.admission.ModelClient;
import io.kvrouter.core.admission.Clock;
import io.kvrouter.core.admission.ModelSnapshot;
import io.kvrouter.core.model.WorkerConfig;
import io.kvrouter.core.model.WorkerRole;
import io.kvrouter.core.selection.RequestLimits;
import io.kvrouter.front.Front;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Join;

/**
 * A one-node cluster (every message serialized) with the routing layer and the front on ephemeral loopback ports,
 * and the calls tests make on it: register workers, read the model's bookings.
 */
public final class FrontNode implements AutoCloseable {
  public static final Duration TIMEOUT = Duration.ofSeconds(10);

  public final ActorTestKit kit;
  public final RouterCluster routing;
  public final Front front;
  public final SimpleMeterRegistry registry;

  private FrontNode(ActorTestKit kit, RouterCluster routing, Front front, SimpleMeterRegistry registry) {
    this.kit = kit;
    this.routing = routing;
    this.front = front;
    this.registry = registry;
  }

  /** A node with {@code config} (HOCON) on top of the test defaults. */
  public static FrontNode start(String config) {
    Config full = ConfigFactory.parseString(config).withFallback(ConfigFactory.load());
    ActorTestKit kit = ActorTestKit.create("front-test", full);
    Cluster cluster = Cluster.get(kit.system());
    cluster.manager().tell(Join.create(cluster.selfMember().address()));
    await().atMost(Duration.ofSeconds(15)).until(() -> cluster.selfMember().status() == MemberStatus.up());
    RouterCluster routing = RouterCluster.init(kit.system(), Clock.SYSTEM);
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    Front front = join(Front.start(kit.system(), routing, kit.system().settings().config(), RequestLimits.defaults(),
        registry, () -> true));
    return new FrontNode(kit, routing, front, registry);
  }

  public String url() {
    return "http://127.0.0.1:" + front.port();
  }

  public void register(String model, String workerId, String endpoint) {
    register(model, new WorkerConfig(workerId, 0, 1, 8192, 1000, 16, endpoint, "", WorkerRole.AGGREGATED));
  }

  public void register(String model, WorkerConfig worker) {
    WorkerConfig inRegion = new WorkerConfig(worker.workerId(), worker.dpStart(), worker.dpSize(),
        worker.maxNumBatchedTokens(), worker.totalKvBlocks(), worker.blockSize(), worker.endpoint(),
        routing.region(), worker.role(), worker.taints(), worker.loraAdapters());
    join(routing.client(model).register(inRegion, TIMEOUT));
    await().atMost(TIMEOUT).until(() -> routing.view(model) != null
        && routing.view(model).worker(worker.workerId()) != null);
  }

  public void setPolicy(String model, String policy, Map<String, String> parameters) {
    join(routing.client(model).setPolicy(policy, parameters, TIMEOUT));
  }

  public ModelSnapshot snapshot(String model) {
    return join(routing.client(model).snapshot(TIMEOUT));
  }

  /** Live bookings of the model, as its admission actor holds them. */
  public int liveBookings(String model) {
    return snapshot(model).bookings().size();
  }

  public static <T> T join(CompletionStage<T> stage) {
    try {
      return stage.toCompletableFuture().get(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  @Override
  public void close() {
    kit.shutdownTestKit();
  }
}
