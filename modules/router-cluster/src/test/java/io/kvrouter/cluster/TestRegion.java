package io.kvrouter.cluster;

import io.kvrouter.cluster.admission.ModelClient;
import static org.awaitility.Awaitility.await;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.kvrouter.core.admission.Clock;
import io.kvrouter.core.selection.SelectionView;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.StreamSupport;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.cluster.Member;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Down;
import org.apache.pekko.cluster.typed.Join;

/**
 * Several nodes of one region in this JVM: one ActorSystem each (127.0.0.1, a free port), the routing layer started on
 * every node, every message serialized ({@code serialize-messages = on}, from the test {@code application.conf}).
 * The first node forms the cluster; the others join it. A node is killed without leaving (its system terminates as a
 * crash would) and a survivor downs it.
 */
final class TestRegion implements AutoCloseable {
  static final Duration TIMEOUT = Duration.ofSeconds(5);
  private static final Duration MEMBERSHIP = Duration.ofSeconds(30);

  /**
   * Nodes never leave on shutdown (a terminated node is a crashed one; tests down it themselves, so failure detection
   * keeps its defaults), and a shard region retries reaching a new coordinator every 200 ms.
   */
  private static final String REGION_CONFIG = """
      pekko.coordinated-shutdown.run-by-actor-system-terminate = off
      pekko.coordinated-shutdown.terminate-actor-system = off
      pekko.cluster.run-coordinated-shutdown-when-down = off
      pekko.cluster.sharding.retry-interval = 200ms
      """;

  /** One node of the region. */
  record Node(ActorTestKit kit, RouterCluster routing) {
    Address address() {
      return Cluster.get(kit.system()).selfMember().address();
    }

    ModelClient client(String model) {
      return routing.client(model);
    }

    boolean sees(String model) {
      return routing.models().contains(model);
    }

    /** This node's view of the model, or null when it has none. */
    SelectionView view(String model) {
      return RouterCluster.get(kit.system()).view(model);
    }

    @Override
    public String toString() {
      return address().toString();
    }
  }

  private final Config config;
  private final Clock clock;
  private final RouterCluster.AdmissionDecorator decorator;
  private final List<Node> nodes = new ArrayList<>();

  private TestRegion(Config config, Clock clock, RouterCluster.AdmissionDecorator decorator) {
    this.config = config;
    this.clock = clock;
    this.decorator = decorator;
  }

  /** {@code count} nodes, all Up; {@code config} is laid over the test defaults on every node. */
  static TestRegion start(int count, String config) {
    return start(count, config, RouterCluster.AdmissionDecorator.NONE);
  }

  /** As {@link #start(int, String)}, every admission actor of every node wrapped by {@code decorator}. */
  static TestRegion start(int count, String config, RouterCluster.AdmissionDecorator decorator) {
    TestRegion region = new TestRegion(ConfigFactory.parseString(config)
        .withFallback(ConfigFactory.parseString(REGION_CONFIG)).withFallback(ConfigFactory.load()), Clock.SYSTEM,
        decorator);
    try {
      for (int i = 0; i < count; i++) {
        region.join();
      }
    } catch (RuntimeException | Error e) {
      region.close();
      throw e;
    }
    return region;
  }

  static TestRegion start(int count) {
    return start(count, "");
  }

  /** A new node: joins the first live node, and is returned once every live node sees every other Up. */
  Node join() {
    return join(clock);
  }

  /** As {@link #join()}, the node's routing layer on a clock of its own (nodes whose clocks disagree). */
  Node join(Clock nodeClock) {
    ActorTestKit kit = ActorTestKit.create("kvrouter-region", config);
    Cluster cluster = Cluster.get(kit.system());
    Address seed = nodes.isEmpty() ? cluster.selfMember().address() : live().get(0).address();
    cluster.manager().tell(Join.create(seed));
    Node node = new Node(kit, RouterCluster.init(kit.system(), nodeClock, decorator));
    nodes.add(node);
    awaitMembership();
    return node;
  }

  /** The live nodes, oldest first (the order they joined). */
  List<Node> live() {
    return nodes.stream().filter(n -> !n.kit().system().whenTerminated().isCompleted()).toList();
  }

  Node node(int index) {
    return nodes.get(index);
  }

  /**
   * Kills {@code victim} as a crash would (its system terminates without leaving), downs it from a survivor, and
   * returns once every survivor has removed it.
   */
  void kill(Node victim) {
    Address address = victim.address();
    ActorTestKit.shutdown(victim.kit().system(), MEMBERSHIP);
    Node survivor = live().get(0);
    Cluster.get(survivor.kit().system()).manager().tell(new Down(address));
    awaitMembership();
  }

  /**
   * {@code leaver} leaves the cluster gracefully (its shards are handed off to the others, their regions buffering
   * commands meanwhile); returns once every other node has removed it and its system has terminated.
   */
  void leave(Node leaver) {
    Address address = leaver.address();
    Cluster.get(leaver.kit().system()).manager().tell(new org.apache.pekko.cluster.typed.Leave(address));
    List<Node> others = live().stream().filter(n -> n != leaver).toList();
    await().atMost(MEMBERSHIP).until(() -> others.stream().allMatch(node -> StreamSupport.stream(
        Cluster.get(node.kit().system()).state().getMembers().spliterator(), false)
        .noneMatch(m -> m.address().equals(address))));
    ActorTestKit.shutdown(leaver.kit().system(), MEMBERSHIP);
    awaitMembership();
  }

  /** The oldest live member (it hosts the shard coordinator). */
  Node oldest() {
    return live().stream().min((a, b) -> {
      Member ma = Cluster.get(a.kit().system()).selfMember();
      Member mb = Cluster.get(b.kit().system()).selfMember();
      return ma.isOlderThan(mb) ? -1 : 1;
    }).orElseThrow();
  }

  private void awaitMembership() {
    List<Node> live = live();
    await().atMost(MEMBERSHIP).until(() -> live.stream().allMatch(node -> {
      Iterable<Member> members = Cluster.get(node.kit().system()).state().getMembers();
      List<Member> up = StreamSupport.stream(members.spliterator(), false).toList();
      return up.size() == live.size() && up.stream().allMatch(m -> m.status() == MemberStatus.up());
    }));
  }

  @Override
  public void close() {
    live().forEach(node -> node.kit().shutdownTestKit());
  }
}
