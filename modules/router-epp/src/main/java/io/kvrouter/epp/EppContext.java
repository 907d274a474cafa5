package io.kvrouter.epp;

import io.kvrouter.cluster.RouterCluster;
import io.kvrouter.front.NodeRouting;
import io.kvrouter.front.request.RequestParser;
import io.kvrouter.front.routing.PromptRouting;

/** What every stream of the picker shares. */
record EppContext(EppSettings settings, RouterCluster cluster, NodeRouting shared, RequestParser parser,
    EppMetrics metrics, long retryAfterSeconds) {

  PromptRouting routing() {
    return shared.routing();
  }
}
