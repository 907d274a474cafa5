package io.kvrouter.cluster.admission;

import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiFunction;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.sharding.typed.ClusterShardingSettings;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.sharding.typed.javadsl.Entity;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityRef;
import org.apache.pekko.cluster.typed.Cluster;

/**
 * The admission entity type on Cluster Sharding, and how a node reaches a model's admission actor in any region:
 * its own region's shard region, or a sharding proxy for another data center (one per region, started the first time
 * a call needs it).
 */
public final class AdmissionEntities {
  private final ClusterSharding sharding;
  private final Cluster cluster;
  private final String self;
  private final BookRelay relay;
  /** The regions whose sharding proxy runs on this node. */
  private final ConcurrentHashMap<String, Boolean> proxies = new ConcurrentHashMap<>();

  private AdmissionEntities(ClusterSharding sharding, Cluster cluster, String self, BookRelay relay) {
    this.sharding = sharding;
    this.cluster = cluster;
    this.self = self;
    this.relay = relay;
  }

  /**
   * Starts the entity type: passivation off (a model that only receives advisory Selects sends its actor nothing: it
   * must never be stopped as idle; an actor passivates itself once its model holds nothing), the admission
   * dispatcher, sharding's stop message. {@code behavior} makes the actor of a model given its shard.
   */
  public static AdmissionEntities start(ActorSystem<?> system,
      BiFunction<String, ActorRef<ClusterSharding.ShardCommand>, Behavior<ModelAdmission.Command>> behavior) {
    ClusterSharding sharding = ClusterSharding.get(system);
    Cluster cluster = Cluster.get(system);
    sharding.init(Entity.of(ModelAdmission.ENTITY_KEY, ctx -> behavior.apply(ctx.getEntityId(), ctx.getShard()))
        .withSettings(ClusterShardingSettings.create(system).withNoPassivationStrategy())
        .withStopMessage(ModelAdmission.Stop.INSTANCE)
        .withEntityProps(DispatcherSelector.fromConfig(AdmissionConfig.DISPATCHER)));
    return new AdmissionEntities(sharding, cluster, cluster.selfMember().dataCenter(), BookRelay.start(system));
  }

  /** How this node relays Books to actors on its region's other nodes; null: an ask each. */
  public BookRelay relay() {
    return relay;
  }

  /** This node's region. */
  public String self() {
    return self;
  }

  /** The model's admission actor in this node's region, through the shard region. */
  public EntityRef<ModelAdmission.Command> local(String model) {
    return sharding.entityRefFor(ModelAdmission.ENTITY_KEY, model);
  }

  /**
   * The model's admission actor in {@code region}: this node's shard region for its own region, else that data
   * center's proxy (started here on first use). A region no member of the cluster belongs to is refused before any
   * proxy starts, so a caller's made-up region names cost nothing: UNAVAILABLE REGION_UNREACHABLE.
   */
  public EntityRef<ModelAdmission.Command> in(String model, String region) {
    if (region.equals(self)) {
      return local(model);
    }
    if (!proxies.containsKey(region) && !cluster.state().getAllDataCenters().contains(region)) {
      throw ModelClient.unreachable(region, model, "has no member in the cluster").toException();
    }
    // concurrent first calls wait for the one that starts the proxy
    proxies.computeIfAbsent(region, r -> {
      // a proxy hosts no entity: its behaviour factory never runs
      sharding.init(Entity.of(ModelAdmission.ENTITY_KEY, ctx -> Behaviors.<ModelAdmission.Command>empty())
          .withDataCenter(r));
      return Boolean.TRUE;
    });
    return sharding.entityRefFor(ModelAdmission.ENTITY_KEY, model, region);
  }
}
