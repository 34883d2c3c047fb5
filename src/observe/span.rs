//! The trace span of a request (feature `tracing`); nothing without the feature.

/// A span for one operation on one server (nothing without the `tracing` feature): entered
/// by the blocking client for the whole call, attached to the future by the async one.
pub(crate) struct Span {
    #[cfg(feature = "tracing")]
    span: tracing::Span,
}

/// The guard of an entered [`Span`].
pub(crate) struct Entered<'a> {
    #[cfg(feature = "tracing")]
    _entered: tracing::span::Entered<'a>,
    #[cfg(not(feature = "tracing"))]
    _span: std::marker::PhantomData<&'a Span>,
}

impl Span {
    /// Enter the span until the guard drops (not across an `.await`).
    #[inline]
    pub(crate) fn enter(&self) -> Entered<'_> {
        Entered {
            #[cfg(feature = "tracing")]
            _entered: self.span.enter(),
            #[cfg(not(feature = "tracing"))]
            _span: std::marker::PhantomData,
        }
    }

    /// `fut` run inside the span.
    #[cfg(all(feature = "async", feature = "tracing"))]
    #[inline]
    pub(crate) fn run<F: std::future::Future>(
        &self,
        fut: F,
    ) -> tracing::instrument::Instrumented<F> {
        use tracing::Instrument;
        fut.instrument(self.span.clone())
    }

    /// `fut` itself: there is no span. Not an `async fn` wrapping `fut.await`: that future
    /// would hold `fut` and copy it in (a request's future is several KB: 280 instructions of
    /// memcpy per async get, callgrind).
    #[cfg(all(feature = "async", not(feature = "tracing")))]
    #[inline]
    pub(crate) fn run<F: std::future::Future>(&self, fut: F) -> F {
        fut
    }
}

#[inline]
pub(crate) fn span(command: &'static str, server: &str) -> Span {
    Span {
        #[cfg(feature = "tracing")]
        span: tracing::debug_span!("memshard", command, server),
    }
}
