package io.kvrouter.cluster.serialization;

import io.kvrouter.cluster.serialization.proto.RankLoadMessage;
import io.kvrouter.cluster.serialization.proto.RankMessage;
import io.kvrouter.cluster.serialization.proto.SelectionMessage;
import io.kvrouter.core.load.RankLoad;
import io.kvrouter.core.model.Rank;
import io.kvrouter.core.selection.SelectionResult;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

/** router-core's records as the protobuf messages of replication.proto that both protobuf serializers send. */
public final class ProtoRecords {
  private ProtoRecords() {}

  public static <P, T> List<T> map(List<P> messages, Function<P, T> read) {
    List<T> values = new ArrayList<>(messages.size());
    for (P message : messages) {
      values.add(read.apply(message));
    }
    return values;
  }

  public static RankMessage rank(Rank rank) {
    return RankMessage.newBuilder().setWorkerId(rank.workerId()).setDpRank(rank.dpRank()).build();
  }

  public static Rank rank(RankMessage m) {
    return new Rank(m.getWorkerId(), m.getDpRank());
  }

  public static RankLoadMessage load(RankLoad load) {
    return RankLoadMessage.newBuilder().setSeq(load.seq()).setInFlight(load.inFlight())
        .setPrefillTokens(load.prefillTokens()).setDecodeBlocks(load.decodeBlocks())
        .setRecentBookings(load.recentBookings()).setRecentAtMillis(load.recentAtMillis()).build();
  }

  public static RankLoad load(RankLoadMessage m) {
    return new RankLoad(m.getSeq(), m.getInFlight(), m.getPrefillTokens(), m.getDecodeBlocks(),
        m.getRecentBookings(), m.getRecentAtMillis());
  }

  public static SelectionMessage selection(SelectionResult s) {
    SelectionMessage.Builder b = SelectionMessage.newBuilder().setRank(rank(s.rank()))
        .setOverlapBlocks(s.overlapBlocks()).setCachedTokens(s.cachedTokens()).setCost(s.cost())
        .setViewVersion(s.viewVersion());
    if (s.endpoint() != null) {
      b.setEndpoint(s.endpoint());
    }
    if (s.region() != null) {
      b.setRegion(s.region());
    }
    if (s.policy() != null) {
      b.setPolicy(s.policy());
    }
    if (s.load() != null) {
      b.setLoad(load(s.load()));
    }
    if (s.decode() != null) {
      b.setDecode(selection(s.decode()));
    }
    return b.build();
  }

  public static SelectionResult selection(SelectionMessage m) {
    return new SelectionResult(rank(m.getRank()), m.hasEndpoint() ? m.getEndpoint() : null,
        m.hasRegion() ? m.getRegion() : null, m.getOverlapBlocks(), m.getCachedTokens(), m.getCost(),
        m.hasLoad() ? load(m.getLoad()) : null, m.getViewVersion(), m.hasPolicy() ? m.getPolicy() : null,
        m.hasDecode() ? selection(m.getDecode()) : null);
  }
}
