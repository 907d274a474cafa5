package io.kvrouter.core.membership;

import io.kvrouter.core.model.WorkerConfig;
import io.kvrouter.core.selection.SelectionView;
import java.util.List;
import java.util.Map;

/**
 * Membership, configs and policy as of one view version of one epoch: what a node needs to build the model's
 * {@link SelectionView}. {@code policy} is the wire name, {@code parameters} every policy
 * parameter as text ("" for an unset optional one, as {@link io.kvrouter.core.policy.PolicyConfig#toParameters}).
 */
public record ViewState(String model, long epoch, long version, List<WorkerConfig> workers, String policy,
    Map<String, String> parameters) {

  public ViewState {
    workers = List.copyOf(workers);
    parameters = Map.copyOf(parameters);
  }

  /** Whether this state is ordered after {@code other} by (epoch, version); any state is newer than null. */
  public boolean isNewerThan(ViewState other) {
    return other == null || SelectionView.isNewer(epoch, version, other.epoch, other.version);
  }
}
