package io.kvrouter.partitions;

import io.grpc.StatusRuntimeException;
import io.kvrouter.api.v1.LoadReport;
import io.kvrouter.api.v1.ModelStateRequest;
import io.kvrouter.api.v1.RankLoadReport;
import io.kvrouter.api.v1.SetPolicyRequest;
import io.kvrouter.api.v1.WorkerRegistration;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The engines: one-rank workers per region with a capacity made explicit by the policy, registered once, then
 * heartbeating through every node of their region (Workers.ReportLoad: recovery mode after a failover admits only to
 * workers that reported since). The reports carry no load of their own, so a worker's admission is judged on the
 * router's booked load alone.
 *
 * <p>Capacity: every request has {@code ISL_TOKENS} = 160 tokens at block size 16, i.e. 10 decode blocks; a worker
 * has 100 KV blocks and the policy's {@code active_decode_blocks_threshold} is 0.35: a rank is overloaded once it
 * holds more than 35 blocks, so it admits a Book while it holds at most 3 bookings (30 blocks) and never holds more
 * than {@link #CAPACITY} = 4 bookings under one owner.
 */
public final class Fleet implements AutoCloseable {
  public static final String MODEL = "partitions/model";
  public static final int ISL_TOKENS = 160;
  public static final int BLOCK_SIZE = 16;
  public static final int KV_BLOCKS = 100;
  public static final String DECODE_THRESHOLD = "0.35";
  public static final int CAPACITY = 4;

  private final Nodes nodes;
  private final Rpc rpc;
  private final Log log;
  private final int workersPerRegion;
  private final ScheduledExecutorService ticker = Executors.newSingleThreadScheduledExecutor();
  private final ExecutorService senders = Executors.newFixedThreadPool(8);
  private final AtomicLong reports = new AtomicLong();
  private final AtomicLong failedReports = new AtomicLong();
  private long tick;

  public Fleet(Nodes nodes, Rpc rpc, Log log, int workersPerRegion) {
    this.nodes = nodes;
    this.rpc = rpc;
    this.log = log;
    this.workersPerRegion = workersPerRegion;
  }

  public static String workerId(String region, int i) {
    return region + "-w" + i;
  }

  /** Every worker by its "region/worker" key, with its capacity. */
  public Map<String, Integer> capacities() {
    Map<String, Integer> c = new LinkedHashMap<>();
    for (String region : nodes.regionNames()) {
      for (int i = 1; i <= workersPerRegion; i++) {
        c.put(region + "/" + workerId(region, i), CAPACITY);
      }
    }
    return c;
  }

  /** Registers the workers and sets the policy through the first node of each region; waits until every node knows. */
  public void register(Duration timeout) {
    for (String region : nodes.regionNames()) {
      int node = nodes.inRegion(region).get(0);
      for (int i = 1; i <= workersPerRegion; i++) {
        rpc.workers(node, 10_000).register(WorkerRegistration.newBuilder().setModel(MODEL)
            .setWorkerId(workerId(region, i)).setDpStart(0).setDpSize(1).setMaxNumBatchedTokens(8192)
            .setTotalKvBlocks(KV_BLOCKS).setBlockSize(BLOCK_SIZE).setRegion(region)
            .setEndpoint("http://engine-" + workerId(region, i) + ".invalid:8000").build());
      }
      rpc.admin(node, 10_000).setPolicy(SetPolicyRequest.newBuilder().setModel(MODEL).setPolicy("least_in_flight")
          .putParameters("active_decode_blocks_threshold", DECODE_THRESHOLD).build());
    }
    nodes.await("every node to see " + workersPerRegion + " workers per region", timeout, () -> {
      for (int node : nodes.all()) {
        try {
          if (rpc.admin(node, 3_000).getModelState(ModelStateRequest.newBuilder().setModel(MODEL).build())
              .getWorkersCount() != workersPerRegion) {
            return false;
          }
        } catch (StatusRuntimeException e) {
          return false;
        }
      }
      return true;
    });
    log.info("registered " + workersPerRegion + " workers per region (capacity " + CAPACITY + " bookings each),"
        + " policy least_in_flight, active_decode_blocks_threshold " + DECODE_THRESHOLD);
  }

  /** Heartbeats: every 250 ms each worker reports (no load) through the next node of its region in turn. */
  public void startHeartbeats() {
    ticker.scheduleAtFixedRate(this::beat, 0, 250, TimeUnit.MILLISECONDS);
  }

  private void beat() {
    long t = tick++;
    for (String region : nodes.regionNames()) {
      List<Integer> regionNodes = new ArrayList<>(nodes.inRegion(region));
      for (int i = 1; i <= workersPerRegion; i++) {
        int node = regionNodes.get((int) ((t + i) % regionNodes.size()));
        String worker = workerId(region, i);
        senders.execute(() -> {
          try {
            rpc.workers(node, 1_000).reportLoad(LoadReport.newBuilder().setModel(MODEL).setWorkerId(worker)
                .addRanks(RankLoadReport.newBuilder().setDpRank(0).build()).build());
            reports.incrementAndGet();
          } catch (StatusRuntimeException e) {
            failedReports.incrementAndGet();
          }
        });
      }
    }
  }

  public String stats() {
    return reports.get() + " load reports answered, " + failedReports.get() + " failed";
  }

  @Override
  public void close() {
    ticker.shutdownNow();
    senders.shutdownNow();
  }
}
