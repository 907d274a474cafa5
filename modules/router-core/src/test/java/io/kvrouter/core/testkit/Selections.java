package io.kvrouter.core.testkit;

import io.kvrouter.core.admission.AdmissionState;
import io.kvrouter.core.admission.Clock;
import io.kvrouter.core.selection.Candidates;
import io.kvrouter.core.selection.SelectionRequest;
import io.kvrouter.core.selection.SelectionResult;
import io.kvrouter.core.selection.Selector;

/** An advisory pick from an admission state's current view, as the inline path makes it. */
public final class Selections {
  private Selections() {}

  public static SelectionResult select(AdmissionState state, Clock clock, SelectionRequest request) {
    return Selector.select(state.view(), request, new Candidates(), clock.millis());
  }
}
