package postgres

import (
	"context"

	"coordinated/coordinate"
)

// fillDependencies sets DependsOn on the BLOCKED units of a listing.
func (ns *namespace) fillDependencies(ctx context.Context, units []*coordinate.WorkUnit, rows []unitRow) error {
	return nil
}

func (ns *namespace) GroupStatus(ctx context.Context, group string) (*coordinate.GroupStatus, error) {
	return nil, errNotImplemented("GroupStatus")
}

func (ns *namespace) CancelGroup(ctx context.Context, group string) (int, error) {
	return 0, errNotImplemented("CancelGroup")
}
