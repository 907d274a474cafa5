package io.kvrouter.cluster;

import com.typesafe.config.Config;
import io.kvrouter.cluster.admission.AdmissionConfig;
import io.kvrouter.cluster.admission.AdmissionEntities;
import io.kvrouter.cluster.admission.ModelAdmission;
import io.kvrouter.cluster.admission.ModelClient;
import io.kvrouter.cluster.explain.ExplainConfig;
import io.kvrouter.cluster.kvevents.KvEventFanout;
import io.kvrouter.cluster.models.ModelSlot;
import io.kvrouter.cluster.models.ModelSlots;
import io.kvrouter.cluster.regions.Regions;
import io.kvrouter.cluster.regions.RegionsConfig;
import io.kvrouter.cluster.replication.ReplicaActor;
import io.kvrouter.cluster.replication.ReplicaClient;
import io.kvrouter.cluster.replication.ReplicaListing;
import io.kvrouter.cluster.replication.ReplicationConfig;
import io.kvrouter.core.admission.Clock;
import io.kvrouter.core.indexer.KvEventSequencer;
import io.kvrouter.core.indexer.ModelKvIndex;
import io.kvrouter.core.selection.SelectionView;
import java.util.List;
import java.util.Set;
import java.util.function.Function;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.apache.pekko.actor.typed.Extension;
import org.apache.pekko.actor.typed.ExtensionId;
import org.apache.pekko.cluster.Member;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityRef;
import org.apache.pekko.cluster.typed.Cluster;

/**
 * A node's routing layer, wired: the node's model slots ({@link ModelSlots}), the admission entity type on Cluster
 * Sharding, the node's replica actor, the KV event fan-out and the regions. It hands out a model's booking facade
 * ({@link #client}) and its slot for advisory Selects ({@link #slot}).
 */
public final class RouterCluster {
  /** Wraps each admission actor's behaviour; production runs it as it is (tests add probes through this seam). */
  public interface AdmissionDecorator extends Function<Behavior<ModelAdmission.Command>,
      Behavior<ModelAdmission.Command>> {
    AdmissionDecorator NONE = admission -> admission;
  }

  private final ActorSystem<?> system;
  private final ModelSlots<ModelAdmission.Command> slots;
  private final AdmissionEntities entities;
  private final AdmissionConfig config;
  private final ReplicaClient replicas;
  private final KvEventFanout kvEvents;
  private final Regions regions;
  private final String selfAddress;

  private RouterCluster(ActorSystem<?> system, ModelSlots<ModelAdmission.Command> slots, AdmissionEntities entities,
      AdmissionConfig config, ReplicaClient replicas, KvEventFanout kvEvents, Regions regions, String selfAddress) {
    this.system = system;
    this.slots = slots;
    this.entities = entities;
    this.config = config;
    this.replicas = replicas;
    this.kvEvents = kvEvents;
    this.regions = regions;
    this.selfAddress = selfAddress;
  }

  public static RouterCluster init(ActorSystem<?> system, Clock clock) {
    return init(system, clock, AdmissionDecorator.NONE);
  }

  /** As {@link #init(ActorSystem, Clock)}, every admission actor wrapped by {@code decorator}. */
  public static RouterCluster init(ActorSystem<?> system, Clock clock, AdmissionDecorator decorator) {
    Config settings = system.settings().config();
    AdmissionConfig config = AdmissionConfig.fromConfig(settings);
    ExplainConfig explain = ExplainConfig.fromConfig(settings);
    ReplicationConfig replication = ReplicationConfig.fromConfig(settings);
    KvEventSequencer.Settings reorder = KvEventFanout.reorderSettings(settings);
    Member self = Cluster.get(system).selfMember();
    String region = self.dataCenter();
    String selfAddress = self.address().toString();
    ModelSlots<ModelAdmission.Command> slots = new ModelSlots<>(new ModelSlots.Settings(config.kvTtl().toMillis(),
        config.kvMaxEntries(), reorder, explain.enabled() ? explain.recent() : 0), clock::millis, selfAddress);
    Regions regions = Regions.start(system, clock::millis, RegionsConfig.fromConfig(settings), region);
    ReplicaListing listing = new ReplicaListing();
    Cluster cluster = Cluster.get(system);
    ModelAdmission.Environment env = new ModelAdmission.Environment(config.settings(), clock, slots,
        config.expiryInterval(), replication, listing, selfAddress, regions.publisher(),
        () -> regionMembers(cluster, region));
    AdmissionEntities entities = AdmissionEntities.start(system,
        (model, shard) -> decorator.apply(ModelAdmission.create(model, shard, env)));
    ActorRef<ReplicaActor.Command> replicaActor = system.systemActorOf(ReplicaActor.create(
            new ReplicaActor.Environment(region, clock, config.expiryInterval(),
                config.settings().heartbeatTimeout().toMillis(), replication.maxChunkBytes(), slots, listing,
                model -> entities.local(model).tell(ModelAdmission.Wake.INSTANCE))),
        // beside the admission actors, so a busy gRPC dispatcher never delays what replicas apply
        "kvrouter-replicas", DispatcherSelector.fromConfig(AdmissionConfig.DISPATCHER));
    listing.bind(replicaActor);
    RouterCluster node = new RouterCluster(system, slots, entities, config,
        new ReplicaClient(replicaActor, slots, system.scheduler(), config.askTimeout()),
        new KvEventFanout(system, slots, config.kvBlocksPerKvBlock(), KvEventFanout.tickInterval(reorder)),
        regions, selfAddress);
    Holder.ID.apply(system).node = node;
    return node;
  }

  /** The members of {@code region} this node's membership lists (every status but removed). */
  private static int regionMembers(Cluster cluster, String region) {
    int members = 0;
    for (Member member : cluster.state().getMembers()) {
      if (member.dataCenter().equals(region) && member.status() != MemberStatus.removed()) {
        members++;
      }
    }
    return members;
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

  /** This node's region (its Pekko data center); workers registered without a region belong to it. */
  public String region() {
    return regions.self();
  }

  /** This node's address, as explanations and state name it. */
  public String selfAddress() {
    return selfAddress;
  }

  /** The regions as this node knows them: pools, the pool a global call goes to, router endpoints. */
  public Regions regions() {
    return regions;
  }

  public KvEventFanout kvEvents() {
    return kvEvents;
  }

  /**
   * Sets the router endpoint (gRPC host:port) this node's pool summaries carry, unless
   * {@code kvrouter.regions.endpoints} names one for this node's region (the server calls it once it has bound).
   */
  public void advertise(String endpoint) {
    regions.advertise(endpoint);
  }

  /**
   * The gRPC endpoint of the node hosting {@code model}'s admission actor in {@code region} (this node's own when it
   * hosts it, else what the owner's pool summaries name), or empty when unknown. One mechanism names the owner: the
   * owner publishes its pool's summary every {@code summary-interval} with its advertised endpoint, and a new owner
   * after a failover does so from its first summary, of a newer epoch.
   */
  public String ownerEndpoint(String model, String region) {
    if (region.equals(regions.self())) {
      ModelSlot<ModelAdmission.Command> slot = slots.find(model);
      if (slot != null && slot.hostsAdmission()) {
        return regions.advertised();
      }
    }
    return regions.ownerEndpoint(model, region);
  }

  /** How this node relays Books to admission actors on its region's other nodes; null when by an ask each. */
  public io.kvrouter.cluster.admission.BookRelay bookRelay() {
    return entities.relay();
  }

  /** The model's slot on this node (its view, for advisory Selects), or null when the node holds nothing for it. */
  public ModelSlot<ModelAdmission.Command> slot(String model) {
    return slots.find(model);
  }

  /** This node's current view of a model, or null. */
  public SelectionView view(String model) {
    return slots.view(model);
  }

  /**
   * This node's KV index of a model (event-fed per worker once it publishes, approximate before), or null while the
   * node holds nothing for it.
   */
  public ModelKvIndex kvIndex(String model) {
    ModelSlot<ModelAdmission.Command> slot = slots.find(model);
    return slot == null ? null : slot.kvIndex();
  }

  /** The booking facade of the model in this node's region. */
  public ModelClient client(String model) {
    return new ModelClient(model, regions.self(), () -> entities.local(model), slots.find(model), system.scheduler(),
        config, replicas, selfAddress, regions.self(), entities.relay());
  }

  /**
   * The booking facade of the model in {@code region} (empty: this node's). Another region is reached through its
   * data center's sharding proxy (Books through this node's relay); a region with no member in the cluster: UNAVAILABLE REGION_UNREACHABLE (thrown).
   */
  public ModelClient client(String model, String region) {
    if (region.isEmpty() || region.equals(regions.self())) {
      return client(model);
    }
    // made now: a region with no member is refused before the client exists
    EntityRef<ModelAdmission.Command> entity = entities.in(model, region);
    return new ModelClient(model, region, () -> entity, null, system.scheduler(), config, replicas,
        selfAddress, regions.self(), entities.relay());
  }

  /** Models with at least one registered worker, as this node sees them. */
  public List<String> models() {
    return slots.models();
  }

  /** Every model this node holds a slot for, even an empty one. */
  public Set<String> modelsHeld() {
    return slots.held();
  }
}
