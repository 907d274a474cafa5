package io.kvrouter.cluster;

import io.kvrouter.core.admission.Clock;
import io.kvrouter.core.indexer.ApproximateKvIndex;
import io.kvrouter.core.indexer.ModelKvIndex;
import io.kvrouter.core.selection.SelectionView;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import java.util.function.Function;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.apache.pekko.actor.typed.Extension;
import org.apache.pekko.actor.typed.ExtensionId;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.actor.typed.Scheduler;
import org.apache.pekko.actor.typed.pubsub.Topic;
import org.apache.pekko.cluster.Member;
import org.apache.pekko.cluster.sharding.typed.ClusterShardingSettings;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.sharding.typed.javadsl.Entity;

/**
 * A node's routing layer: the admission entity type on Cluster Sharding (passivation off, its own dispatcher), the
 * node's replica actor ({@link ReplicaNode}), the node-local view registry and one {@link ModelClient} per model.
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
  private final Map<String, ModelKvIndex> kvIndexes;
  private final KvEventFanout kvEvents;
  private final String region;
  private final NodeReplicas replicas;
  private final String selfAddress;
  private final DecisionLogs decisions;
  private final Regions regions;
  /** This node's router endpoint as its pools' summaries carry it (see {@link #advertise}). */
  private final AtomicReference<List<String>> ownEndpoints;
  /** Facades of the models this node has a view of; dropped when the model's actor passivates. */
  private final Map<String, ModelClient> clients;

  private RouterCluster(ClusterSharding sharding, ViewRegistry registry, LocalAdmissions locals, Scheduler scheduler,
      Clock clock, AdmissionConfig config, Map<String, ModelKvIndex> kvIndexes, Map<String, ModelClient> clients,
      KvEventFanout kvEvents, String region, NodeReplicas replicas, String selfAddress, DecisionLogs decisions,
      Regions regions, AtomicReference<List<String>> ownEndpoints) {
    this.regions = regions;
    this.ownEndpoints = ownEndpoints;
    this.replicas = replicas;
    this.decisions = decisions;
    this.selfAddress = selfAddress;
    this.sharding = sharding;
    this.registry = registry;
    this.locals = locals;
    this.scheduler = scheduler;
    this.clock = clock;
    this.config = config;
    this.kvIndexes = kvIndexes;
    this.clients = clients;
    this.kvEvents = kvEvents;
    this.region = region;
  }

  /** This node's region (its Pekko data center); workers registered without a region belong to it. */
  public String region() {
    return region;
  }

  /**
   * This node's KV index of a model (event-fed per worker once it publishes, approximate before), or null while the
   * model has no admission actor here.
   */
  public ModelKvIndex kvIndex(String model) {
    return kvIndexes.get(model);
  }

  /** The other regions as this node knows them: their pools, router endpoints and relayed calls. */
  public Regions regions() {
    return regions;
  }

  /**
   * Sets the router endpoint (gRPC host:port) this node's pool summaries carry, unless
   * {@code kvrouter.regions.endpoints} names one for this node's region (the server calls it once it has bound).
   */
  public void advertise(String endpoint) {
    if (!endpoint.isEmpty()) {
      ownEndpoints.compareAndSet(List.of(), List.of(endpoint));
    }
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
    DecisionLogs decisions = new DecisionLogs(ExplainConfig.fromConfig(system.settings().config()));
    ReplicationConfig replication = ReplicationConfig.fromConfig(system.settings().config());
    ViewRegistry registry = ViewRegistry.get(system);
    ConcurrentHashMap<String, ModelKvIndex> kvIndexes = new ConcurrentHashMap<>();
    Function<String, ModelKvIndex> kvIndex = model -> kvIndexes.computeIfAbsent(model,
        m -> new ModelKvIndex(config.kvTtl().toMillis(), config.kvMaxEntries(),
            ApproximateKvIndex.DEFAULT_PRUNE_TARGET_RATIO, clock::millis));
    LocalAdmissions locals = new LocalAdmissions();
    ConcurrentHashMap<String, ModelClient> clients = new ConcurrentHashMap<>();
    Consumer<String> forget = model -> {
      clients.remove(model);
      registry.forget(model);
      kvIndexes.remove(model);
      locals.forget(model);
      decisions.forget(model);
    };
    Member self = org.apache.pekko.cluster.typed.Cluster.get(system).selfMember();
    String region = self.dataCenter();
    String selfAddress = self.address().toString();
    ReplicaPeers peers = new ReplicaPeers();
    ActorRef<ReplicaNode.Command> replicaNode = system.systemActorOf(ReplicaNode.create(new ReplicaNode.Environment(
            region, clock, config.expiryInterval(), config.settings().heartbeatTimeout().toMillis(),
            replication.maxChunkBytes(), registry, kvIndex::apply, locals::hosts, forget, peers)),
        // beside the admission actors, so a busy gRPC dispatcher never delays what replicas apply
        "kvrouter-replicas", DispatcherSelector.fromConfig(AdmissionConfig.DISPATCHER));
    peers.bind(replicaNode);
    RegionsConfig regionsConfig = RegionsConfig.fromConfig(system.settings().config());
    String configuredEndpoint = regionsConfig.endpoints().get(region);
    AtomicReference<List<String>> ownEndpoints = new AtomicReference<>(
        configuredEndpoint == null ? List.of() : List.of(configuredEndpoint));
    ActorRef<Topic.Command<PoolSummaries.Published>> poolTopic = system.systemActorOf(
        Topic.create(PoolSummaries.Published.class, PoolSummaries.TOPIC), "kvrouter-pools-topic", Props.empty());
    PoolSummaries pools = new PoolSummaries(clock::millis, regionsConfig);
    system.systemActorOf(PoolSummaries.listener(pools, poolTopic, regionsConfig.staleAfter().dividedBy(4)),
        "kvrouter-pools",
        Props.empty());
    ModelAdmission.Environment env = new ModelAdmission.Environment(config.settings(), clock, registry,
        config.expiryInterval(), kvIndex::apply, locals, forget, replication, peers, selfAddress, decisions::of,
        new PoolPublisher(poolTopic, region, regionsConfig.summaryInterval(), ownEndpoints));
    ClusterSharding sharding = ClusterSharding.get(system);
    // A model that only receives advisory Selects sends its actor nothing: it must never be stopped as idle. An
    // actor passivates itself once its model holds nothing (ModelAdmission.afterCommand).
    ClusterShardingSettings settings = ClusterShardingSettings.create(system).withNoPassivationStrategy();
    sharding.init(Entity.of(ModelAdmission.ENTITY_KEY,
            ctx -> decorator.apply(ModelAdmission.create(ctx.getEntityId(), ctx.getShard(), env)))
        .withSettings(settings)
        .withStopMessage(ModelAdmission.Stop.INSTANCE)
        .withEntityProps(DispatcherSelector.fromConfig(AdmissionConfig.DISPATCHER)));
    Regions regions = new Regions(region, pools, regionsConfig, config, sharding,
        org.apache.pekko.cluster.typed.Cluster.get(system), ownEndpoints);
    NodeReplicas replicas = new NodeReplicas(replicaNode, registry, system.scheduler(), config.askTimeout());
    RouterCluster node = new RouterCluster(sharding, registry, locals, system.scheduler(), clock, config, kvIndexes,
        clients, new KvEventFanout(system, registry, kvIndex, config.kvBlocksPerKvBlock(), clock::millis), region,
        replicas, selfAddress, decisions, regions, ownEndpoints);
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

  /**
   * The facade of a model. One per model and node while the node has a view of it; for a model it has no view of,
   * a throwaway facade that keeps nothing: it answers every call as for an unknown model, except Register, which
   * goes through the shard region and starts the model's actor. A facade is valid for the life of its model's actor:
   * look it up per call (a facade kept across a passivation keeps reading the old, empty view).
   */
  public ModelClient client(String model) {
    ModelClient known = clients.get(model);
    if (known != null) {
      return known;
    }
    SelectionView view = registry.view(model);
    if (view == null || view.isEmpty()) {
      return new ModelClient(model, sharding.entityRefFor(ModelAdmission.ENTITY_KEY, model), new AtomicReference<>(),
          scheduler, new AtomicReference<>(), clock, config, replicas, selfAddress, region, null);
    }
    return clients.computeIfAbsent(model, m -> new ModelClient(m,
        sharding.entityRefFor(ModelAdmission.ENTITY_KEY, m), locals.slot(m), scheduler, registry.slot(m), clock,
        config, replicas, selfAddress, region, decisions.of(m)));
  }

  /** Every model this node keeps anything for (facade, view slot, KV index, local-actor slot), even an empty one. */
  Set<String> modelsHeld() {
    Set<String> held = new TreeSet<>(clients.keySet());
    held.addAll(registry.modelsHeld());
    held.addAll(kvIndexes.keySet());
    held.addAll(locals.modelsHeld());
    return held;
  }

  /** Models with at least one registered worker, as this node sees them. */
  public List<String> models() {
    return registry.models();
  }
}
