package io.kvrouter.engines.connector;

import java.util.List;

/**
 * An engine's connector as every node of the region sees it (published every status interval).
 *
 * @param node the node running the connector (its Pekko address)
 * @param incarnation when this connector started (epoch millis): a newer incarnation's status replaces an older one's
 * @param configFrom the node whose engine source gave the configuration in use
 * @param configOrigin that source: {@code file:PATH} or {@code kubernetes:NAMESPACE/POD}
 * @param configConflicts nodes whose sources describe this engine differently
 * @param phase {@code AWAITING_CAPACITY} (block size / KV blocks not known yet), {@code REGISTERING},
 *     {@code RUNNING}, {@code STOPPED}
 * @param available the last successful scrape is within the heartbeat timeout
 * @param lastScrapeMillis when the last scrape finished (epoch millis, 0: never)
 * @param lastScrapeError the last scrape's error, empty when it succeeded
 * @param engineRestarts times a new engine was detected (sequence back, changed capacity, another batch under the
 *     same sequence number) and the worker registered again
 * @param lastError the last registration or deregistration failure, empty when the last one succeeded
 */
public record EngineStatus(String model, String workerId, String kind, String node, long incarnation,
    String configFrom, String configOrigin, List<String> configConflicts, String phase, boolean registered,
    int blockSize, int totalKvBlocks, int dpSize, boolean kvEvents, boolean available, long lastScrapeMillis,
    long lastScrapeOkMillis, String lastScrapeError, long scrapes, long scrapeErrors, long engineRestarts,
    String lastError, List<RankStatus> ranks, long publishedAtMillis) {

  public RankStatus rank(int rank) {
    for (RankStatus status : ranks) {
      if (status.rank() == rank) {
        return status;
      }
    }
    return null;
  }
}
