package io.kvrouter.cluster;

import io.kvrouter.core.admission.Clock;
import io.kvrouter.core.indexer.ApproximateKvIndex;
import io.kvrouter.core.indexer.ModelKvIndex;
import java.util.function.Function;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.apache.pekko.actor.typed.Extension;
import org.apache.pekko.actor.typed.ExtensionId;
import org.apache.pekko.actor.typed.Scheduler;
import org.apache.pekko.cluster.sharding.typed.ClusterShardingSettings;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.sharding.typed.javadsl.Entity;

/**
 * A node's routing layer: the admission entity type on Cluster Sharding (passivation off, its own dispatcher), the
 * node-local view registry and one {@link ModelClient} per model.
 */
public final class RouterCluster {
  /** Wraps each admission actor's behaviour; production runs it as it is (tests add probes through this seam). */
  public interface AdmissionDecorator extends Function<Behavior<ModelAdmission.Command>,
      Behavior<ModelAdmission.Command>> {
    AdmissionDecorator NONE = admission -> admission;
  }

  private final ClusterSharding sharding;
  private final ViewRegistry registry;
  private final LocalAdmissions locals;
  private final Scheduler scheduler;
  private final Clock clock;
  private final AdmissionConfig config;
  private final Function<String, ModelKvIndex> kvIndex;
  private final KvEventFanout kvEvents;
  private final String region;
  private final ConcurrentHashMap<String, ModelClient> clients = new ConcurrentHashMap<>();

  private RouterCluster(ClusterSharding sharding, ViewRegistry registry, LocalAdmissions locals, Scheduler scheduler,
      Clock clock, AdmissionConfig config, Function<String, ModelKvIndex> kvIndex, KvEventFanout kvEvents,
      String region) {
    this.sharding = sharding;
    this.registry = registry;
    this.locals = locals;
    this.scheduler = scheduler;
    this.clock = clock;
    this.config = config;
    this.kvIndex = kvIndex;
    this.kvEvents = kvEvents;
    this.region = region;
  }

  /** This node's region (its Pekko data center); workers registered without a region belong to it. */
  public String region() {
    return region;
  }

  /** This node's KV index of a model (event-fed per worker once it publishes, approximate before). */
  public ModelKvIndex kvIndex(String model) {
    return kvIndex.apply(model);
  }

  public KvEventFanout kvEvents() {
    return kvEvents;
  }

  public static RouterCluster init(ActorSystem<?> system, Clock clock) {
    return init(system, clock, AdmissionDecorator.NONE);
  }

  /** As {@link #init(ActorSystem, Clock)}, every admission actor wrapped by {@code decorator}. */
  public static RouterCluster init(ActorSystem<?> system, Clock clock, AdmissionDecorator decorator) {
    AdmissionConfig config = AdmissionConfig.fromConfig(system.settings().config());
    ViewRegistry registry = ViewRegistry.get(system);
    ConcurrentHashMap<String, ModelKvIndex> kvIndexes = new ConcurrentHashMap<>();
    Function<String, ModelKvIndex> kvIndex = model -> kvIndexes.computeIfAbsent(model,
        m -> new ModelKvIndex(config.kvTtl().toMillis(), config.kvMaxEntries(),
            ApproximateKvIndex.DEFAULT_PRUNE_TARGET_RATIO, clock::millis));
    LocalAdmissions locals = new LocalAdmissions();
    ModelAdmission.Environment env = new ModelAdmission.Environment(config.settings(), clock, registry,
        config.expiryInterval(), kvIndex::apply, locals);
    ClusterSharding sharding = ClusterSharding.get(system);
    // A model that only receives advisory Selects sends its actor nothing: it must never be stopped as idle.
    ClusterShardingSettings settings = ClusterShardingSettings.create(system).withNoPassivationStrategy();
    sharding.init(Entity.of(ModelAdmission.ENTITY_KEY, ctx -> decorator.apply(ModelAdmission.create(ctx.getEntityId(), env)))
        .withSettings(settings)
        .withEntityProps(DispatcherSelector.fromConfig(AdmissionConfig.DISPATCHER)));
    RouterCluster node = new RouterCluster(sharding, registry, locals, system.scheduler(), clock, config, kvIndex,
        new KvEventFanout(system, registry, kvIndex),
        org.apache.pekko.cluster.typed.Cluster.get(system).selfMember().dataCenter());
    Holder.ID.apply(system).node = node;
    return node;
  }

  /** The routing layer that {@link #init} started on this system (management routes find it here). */
  public static RouterCluster get(ActorSystem<?> system) {
    RouterCluster node = Holder.ID.apply(system).node;
    if (node == null) {
      throw new IllegalStateException("RouterCluster.init has not run on " + system.name());
    }
    return node;
  }

  private static final class Holder implements Extension {
    static final ExtensionId<Holder> ID = new ExtensionId<>() {
      @Override
      public Holder createExtension(ActorSystem<?> system) {
        return new Holder();
      }
    };

    volatile RouterCluster node;
  }

  /** The facade of a model (created on first use, one per model and node). */
  public ModelClient client(String model) {
    return clients.computeIfAbsent(model, m -> new ModelClient(m,
        sharding.entityRefFor(ModelAdmission.ENTITY_KEY, m), locals.slot(m), scheduler, registry.slot(m), clock,
        config));
  }

  /** Models with at least one registered worker, as this node sees them. */
  public List<String> models() {
    return registry.models();
  }
}
