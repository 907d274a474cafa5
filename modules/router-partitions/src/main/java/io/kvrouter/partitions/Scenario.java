package io.kvrouter.partitions;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The scenarios: which nodes in which regions, and the fault the runner applies to them under load. */
public enum Scenario {
  /** The model's owner cut off from the two other nodes of its region. */
  MINORITY_OWNER("minority-owner", 3, 1, "the owner is cut off from both other nodes of its region"),
  /** A 2-1 split of the region with the owner on the majority side: a non-owner is cut off. */
  MAJORITY_OWNER("majority-owner", 3, 1, "a non-owner is cut off; the owner keeps the majority"),
  /** The owner's packets to the two other nodes are dropped; theirs still reach it. */
  ONE_WAY("one-way", 3, 1, "the owner's packets to the other nodes are dropped (one way)"),
  /** Every remoting byte between the owner and each other node delayed 200 ms +- 50 ms, each way. */
  SLOW_LINK("slow-link", 3, 1, "owner <-> replicas delayed 200 ms +- 50 ms each way (toxiproxy)"),
  /** Two regions of three; the first cut off from the second, whose clients Select and Book globally. */
  REGION_CUT("region-cut", 6, 2, "region east cut off from region west; west's clients Select and Book globally"),
  /** Five nodes; the owner crashes (SIGKILL) and, during the failover, one survivor is cut off from the others. */
  FAILOVER_PARTITION("failover-partition", 5, 1,
      "the owner is killed, and during the failover a survivor is cut off from the other three");

  public final String id;
  public final int nodes;
  public final int regions;
  public final String fault;

  Scenario(String id, int nodes, int regions, String fault) {
    this.id = id;
    this.nodes = nodes;
    this.regions = regions;
    this.fault = fault;
  }

  public static Scenario of(String id) {
    return Arrays.stream(values()).filter(s -> s.id.equals(id)).findFirst().orElseThrow(
        () -> new IllegalArgumentException("unknown scenario '" + id + "'; known: " + ids()));
  }

  public static List<String> ids() {
    return Arrays.stream(values()).map(s -> s.id).toList();
  }

  /** Each node's region: "east" (and "west" for the second half when there are two regions). */
  public Map<Integer, String> regionsByNode() {
    Map<Integer, String> m = new LinkedHashMap<>();
    int perRegion = nodes / regions;
    for (int n = 1; n <= nodes; n++) {
      m.put(n, regions == 1 || n <= perRegion ? "east" : "west");
    }
    return m;
  }
}
