package io.kvrouter.cluster.regions;

import io.kvrouter.core.admission.AdmissionState;
import io.kvrouter.core.regions.PoolSummary;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.pubsub.Topic;

/**
 * How the admission actors of a node publish their pools' summaries: to the cluster-wide topic, with this node's
 * region, router endpoint (the region's configured endpoint, else this node's advertised gRPC endpoint) and, as the
 * owner endpoint, this node's advertised gRPC endpoint itself: the node hosting the admission actor is the one that
 * publishes, so every node of every region learns from the summaries where the model's owner is reached.
 */
public final class PoolPublisher {
  private final ActorRef<Topic.Command<PoolSummaries.Published>> topic;
  private final String region;
  private final Duration interval;
  private final AtomicReference<List<String>> endpoints;
  private final AtomicReference<String> advertised;

  PoolPublisher(ActorRef<Topic.Command<PoolSummaries.Published>> topic, String region, Duration interval,
      AtomicReference<List<String>> endpoints, AtomicReference<String> advertised) {
    this.topic = topic;
    this.region = region;
    this.interval = interval;
    this.endpoints = endpoints;
    this.advertised = advertised;
  }

  public Duration interval() {
    return interval;
  }

  /** Publishes the summary of {@code state}'s pool as of now (no workers: the pool is gone). */
  public void publish(AdmissionState state, long sequence) {
    topic.tell(Topic.publish(new PoolSummaries.Published(
        PoolSummary.of(region, state.view(), state.pending(), endpoints.get(), advertised.get(), sequence))));
  }
}
