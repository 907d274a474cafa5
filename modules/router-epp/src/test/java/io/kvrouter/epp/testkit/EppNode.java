package io.kvrouter.epp.testkit;

import static org.awaitility.Awaitility.await;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.kvrouter.cluster.RouterCluster;
import io.kvrouter.core.admission.Clock;
import io.kvrouter.core.admission.ModelSnapshot;
import io.kvrouter.core.model.WorkerConfig;
import io.kvrouter.core.model.WorkerRole;
import io.kvrouter.core.selection.RequestLimits;
import io.kvrouter.epp.EndpointPicker;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import io.kvrouter.cluster.admission.ModelAdmission;
import io.kvrouter.core.selection.SelectionRequest;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.BehaviorInterceptor;
import org.apache.pekko.actor.typed.TypedActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Join;

/**
 * A one-node cluster (every message serialized) with the routing layer and the endpoint picker on ephemeral
 * loopback ports, and the calls tests make on it: register workers (their endpoints are never contacted: Envoy, not
 * the picker, forwards), read the model's bookings.
 */
public final class EppNode implements AutoCloseable {
  public static final Duration TIMEOUT = Duration.ofSeconds(10);

  /** Every Book the admission actors of this JVM's nodes received, by request id (what the picker asked for). */
  public static final Map<String, SelectionRequest> BOOKS = new ConcurrentHashMap<>();

  public final ActorTestKit kit;
  public final RouterCluster routing;
  public final EndpointPicker picker;
  public final SimpleMeterRegistry registry;

  private EppNode(ActorTestKit kit, RouterCluster routing, EndpointPicker picker, SimpleMeterRegistry registry) {
    this.kit = kit;
    this.routing = routing;
    this.picker = picker;
    this.registry = registry;
  }

  /** A node with {@code config} (HOCON) on top of the test defaults. */
  public static EppNode start(String config) {
    Config full = ConfigFactory.parseString(config).withFallback(ConfigFactory.load());
    ActorTestKit kit = ActorTestKit.create("epp-test", full);
    Cluster cluster = Cluster.get(kit.system());
    cluster.manager().tell(Join.create(cluster.selfMember().address()));
    await().atMost(Duration.ofSeconds(15)).until(() -> cluster.selfMember().status() == MemberStatus.up());
    RouterCluster routing = RouterCluster.init(kit.system(), Clock.SYSTEM, EppNode::recordingBooks);
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    EndpointPicker picker = EndpointPicker.start(kit.system(), routing, kit.system().settings().config(),
        RequestLimits.defaults(), registry, () -> cluster.selfMember().status() == MemberStatus.up());
    return new EppNode(kit, routing, picker, registry);
  }

  /** The real admission actor, with every Book it receives recorded in {@link #BOOKS} first. */
  private static Behavior<ModelAdmission.Command> recordingBooks(Behavior<ModelAdmission.Command> admission) {
    return Behaviors.intercept(() -> new BehaviorInterceptor<ModelAdmission.Command, ModelAdmission.Command>(
        ModelAdmission.Command.class) {
      @Override
      public Behavior<ModelAdmission.Command> aroundReceive(TypedActorContext<ModelAdmission.Command> ctx,
          ModelAdmission.Command message, ReceiveTarget<ModelAdmission.Command> target) {
        if (message instanceof ModelAdmission.Book book) {
          BOOKS.put(book.request().requestId(), book.request());
        }
        return target.apply(ctx, message);
      }
    }, admission);
  }

  /** Registers a worker of one rank whose base URL is {@code endpoint}. */
  public void register(String model, String workerId, String endpoint) {
    register(model, new WorkerConfig(workerId, 0, 1, 8192, 1000, 16, endpoint, routing.region(),
        WorkerRole.AGGREGATED));
  }

  public void register(String model, WorkerConfig worker) {
    join(routing.client(model).register(worker, TIMEOUT));
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
