package io.kvrouter.engines.connector;

import com.typesafe.config.Config;
import java.time.Duration;

/**
 * A connector's timings and bounds ({@code kvrouter.engines} in reference.conf).
 *
 * @param replayTimeout how long a replay waits for each reply before it is given up
 * @param replayAttempts replay requests sent in all when none is answered within the timeout
 * @param catchUpAfter a rank that heard nothing for this long asks the replay for what follows its last batch
 * @param callTimeout Register, Deregister and ReportLoad ask timeout
 * @param heartbeatTimeout a worker without a load report this long is unavailable (the admission layer's setting)
 * @param receiveHighWaterMark messages a SUB socket queues before ZMQ drops (a gap, replayed)
 * @param maxMessageBytes a ZMQ message above this disconnects the publisher (ZMQ_MAXMSGSIZE)
 * @param retryInterval between failed registrations
 */
public record ConnectorSettings(Duration scrapeInterval, Duration scrapeTimeout, Duration replayTimeout,
    int replayAttempts, Duration catchUpAfter, Duration callTimeout, Duration heartbeatTimeout,
    int receiveHighWaterMark, long maxMessageBytes, Duration retryInterval, int maxReplayBatches) {

  public static ConnectorSettings fromConfig(Config config) {
    Config engines = config.getConfig("kvrouter.engines");
    return new ConnectorSettings(engines.getDuration("scrape-interval"), engines.getDuration("scrape-timeout"),
        engines.getDuration("replay-timeout"), engines.getInt("replay-attempts"),
        engines.getDuration("catch-up-after"), engines.getDuration("call-timeout"),
        config.getDuration("kvrouter.admission.heartbeat-timeout"), engines.getInt("receive-high-water-mark"),
        engines.getBytes("max-message-bytes"), engines.getDuration("retry-interval"),
        engines.getInt("max-replay-batches"));
  }
}
