package events

// The package's bounds, for its external tests.
const (
	MaxReasonLength            = maxReasonLength
	MaxActionLength            = maxActionLength
	MaxReportingInstanceLength = maxReportingInstanceLength
	MaxNoteLength              = maxNoteLength
	FinishTime                 = finishTime
	DefaultCacheSize           = defaultCacheSize
)
