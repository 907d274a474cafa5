package io.kvrouter.server.grpc;

import io.kvrouter.core.selection.RequestLimits;
import static io.kvrouter.api.Stages.SAME_THREAD;

import io.kvrouter.api.v1.Deregistered;
import io.kvrouter.api.v1.KvEventAck;
import io.kvrouter.api.v1.KvEvent;
import io.kvrouter.api.v1.KvEventBatch;
import io.kvrouter.api.v1.KvRemoved;
import io.kvrouter.api.v1.KvStored;
import io.kvrouter.api.v1.LoadAck;
import io.kvrouter.api.v1.LoadReport;
import io.kvrouter.api.v1.RankLoadReport;
import io.kvrouter.api.v1.Registered;
import io.kvrouter.api.v1.WorkerKey;
import io.kvrouter.api.v1.WorkerRegistration;
import io.kvrouter.api.v1.WorkersPowerApi;
import io.kvrouter.cluster.kvevents.KvEventFanout;
import io.kvrouter.cluster.kvevents.KvEventRecord;
import io.kvrouter.cluster.RouterCluster;
import io.kvrouter.core.indexer.StorageTier;
import io.kvrouter.core.membership.RankReport;
import io.kvrouter.core.model.WorkerConfig;
import io.kvrouter.core.error.RoutingError;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import io.kvrouter.server.metrics.RouterMetrics;
import org.apache.pekko.grpc.javadsl.Metadata;

/**
 * kvrouter.v1.Workers: membership and engine-reported load through the model's admission actor, with the caller's
 * deadline from the metadata; KV events straight into the node's index.
 */
public final class WorkersService implements WorkersPowerApi {
  private final RouterCluster cluster;
  private final ProtoMapping mapping;
  private final RouterMetrics metrics;

  public WorkersService(RouterCluster cluster, ProtoMapping mapping, RouterMetrics metrics) {
    this.cluster = cluster;
    this.mapping = mapping;
    this.metrics = metrics;
  }

  @Override
  public CompletionStage<Registered> register(WorkerRegistration in, Metadata metadata) {
    return Calls.counted(metrics, "Register", () -> {
      WorkerConfig config = mapping.toWorkerConfig(in, cluster.region());
      // a worker of another region joins that region's pool, through its admission actor
      CompletionStage<io.kvrouter.core.membership.Registered> registered = cluster.client(in.getModel(),
          config.region()).register(config, Deadlines.remaining(metadata));
      return registered
          .thenApplyAsync(r -> Registered.newBuilder().setCreated(r.created()).setViewVersion(r.viewVersion())
              .build(), SAME_THREAD);
    });
  }

  @Override
  public CompletionStage<Deregistered> deregister(WorkerKey in, Metadata metadata) {
    return Calls.counted(metrics, "Deregister", () -> {
      RequestLimits.requireModel(in.getModel());
      RequestLimits.requireWorkerId(in.getWorkerId());
      return cluster.client(in.getModel()).deregister(in.getWorkerId(), Deadlines.remaining(metadata))
          .thenApplyAsync(dropped -> Deregistered.newBuilder().setApplied(true).setDroppedBookings(dropped)
              .build(), SAME_THREAD);
    });
  }

  @Override
  public CompletionStage<LoadAck> reportLoad(LoadReport in, Metadata metadata) {
    return Calls.counted(metrics, "ReportLoad", () -> {
      mapping.validate(in);
      List<RankReport> ranks = new ArrayList<>(in.getRanksCount());
      for (RankLoadReport r : in.getRanksList()) {
        if (r.getLoraAdaptersCount() > io.kvrouter.core.selection.RequestLimits.MAX_LORA_ADAPTERS) {
          io.kvrouter.core.selection.RequestLimits.requireLoraAdapters(r.getLoraAdaptersList());
        }
        ranks.add(new RankReport(r.getDpRank(), r.getActiveDecodeBlocks(), r.getActivePrefillTokens(),
            r.getWaitingRequests(), java.util.Set.copyOf(r.getLoraAdaptersList())));
      }
      return cluster.client(in.getModel()).reportLoad(in.getWorkerId(), ranks, Deadlines.remaining(metadata))
          .thenApplyAsync(done -> LoadAck.newBuilder().setApplied(true).build(), SAME_THREAD);
    });
  }

  /**
   * Applies the batch to this node's index of the model at once (on the calling thread, reading no deadline), and
   * to the region's other nodes by pub-sub; events ahead of a missing id are held (see KvEventFanout).
   */
  @Override
  public CompletionStage<KvEventAck> publishKvEvents(KvEventBatch in, Metadata metadata) {
    return Calls.counted(metrics, "PublishKvEvents", () -> {
      mapping.validate(in);
      List<KvEventRecord> events = new ArrayList<>(in.getEventsCount());
      for (KvEvent event : in.getEventsList()) {
        events.add(toRecord(event));
      }
      KvEventFanout.Applied applied = cluster.kvEvents().publish(in.getModel(), in.getWorkerId(), in.getDpRank(),
          events);
      return CompletableFuture.completedFuture(KvEventAck.newBuilder().setApplied(applied.applied())
          .setHeld(applied.held()).setGaps((int) applied.gaps()).build());
    });
  }

  private static KvEventRecord toRecord(KvEvent event) {
    return switch (event.getDataCase()) {
      case STORED -> {
        KvStored stored = event.getStored();
        long[] blockHashes = new long[stored.getBlocksCount()];
        long[] tokensHashes = new long[stored.getBlocksCount()];
        for (int i = 0; i < blockHashes.length; i++) {
          blockHashes[i] = stored.getBlocks(i).getBlockHash();
          tokensHashes[i] = stored.getBlocks(i).getTokensHash();
        }
        yield new KvEventRecord(event.getEventId(), KvEventRecord.Kind.STORED, tier(stored.getStorageTier()),
            stored.hasParentBlockHash() ? stored.getParentBlockHash() : null, blockHashes, tokensHashes);
      }
      case REMOVED -> {
        KvRemoved removed = event.getRemoved();
        long[] blockHashes = new long[removed.getBlockHashesCount()];
        for (int i = 0; i < blockHashes.length; i++) {
          blockHashes[i] = removed.getBlockHashes(i);
        }
        yield new KvEventRecord(event.getEventId(), KvEventRecord.Kind.REMOVED, tier(removed.getStorageTier()),
            null, blockHashes, null);
      }
      case CLEARED -> new KvEventRecord(event.getEventId(), KvEventRecord.Kind.CLEARED, StorageTier.DEVICE, null,
          null, null);
      case DATA_NOT_SET -> throw RoutingError.invalid(RoutingError.MALFORMED,
          "KV event " + event.getEventId() + " has no stored, removed or cleared data").toException();
    };
  }

  private static StorageTier tier(io.kvrouter.api.v1.StorageTier tier) {
    return switch (tier) {
      case STORAGE_TIER_DEVICE -> StorageTier.DEVICE;
      case STORAGE_TIER_HOST -> StorageTier.HOST;
      case STORAGE_TIER_DISK -> StorageTier.DISK;
      case UNRECOGNIZED -> throw new IllegalStateException("checked by ProtoMapping.validate");
    };
  }
}
