package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// strictCommands makes every command that only groups others (the root,
// tools, resources, prompts, handlers, completion) refuse an unknown
// subcommand with a usage error (exit 2) that suggests the closest one,
// instead of printing its help and succeeding. Without arguments such a
// command prints its help, as before.
//
// A command with a Run is found by cobra with its arguments as they are, so
// an unknown flag before the command's name is reported as the unknown flag
// it is, not as an unknown command made of the flag's supposed value.
func strictCommands(root *cobra.Command) {
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.SuggestionsMinimumDistance = 2
		if c.Name() == "help" && c.Parent() == root {
			c.Args = knownHelpTopic
		}
		if c.HasSubCommands() && c.Run == nil && c.RunE == nil {
			c.Args = knownSubcommand
			c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// knownSubcommand is the Args of a command that groups others: it is given
// arguments only when the first names no subcommand.
func knownSubcommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	} else {
		var have []string
		for _, sub := range cmd.Commands() {
			if sub.IsAvailableCommand() {
				have = append(have, sub.Name())
			}
		}
		msg += " (have: " + strings.Join(have, ", ") + ")"
	}
	return usageErr("%s (see %s --help)", msg, cmd.CommandPath())
}

// knownHelpTopic is the Args of help: each argument names a subcommand of
// the one before.
func knownHelpTopic(cmd *cobra.Command, args []string) error {
	c := cmd.Root()
	for _, arg := range args {
		var next *cobra.Command
		for _, sub := range c.Commands() {
			if sub.Name() == arg || sub.HasAlias(arg) {
				next = sub
			}
		}
		if next == nil {
			return knownSubcommand(c, []string{arg})
		}
		c = next
	}
	return nil
}

// isGroup reports whether cmd only groups subcommands: it needs no settings.
func isGroup(cmd *cobra.Command) bool { return cmd.HasSubCommands() }

// flagError is err, a flag that cmd could not parse, with the closest flag
// cmd takes when err names an unknown long flag (--timout: did you mean
// --timeout?), and where to look.
func flagError(cmd *cobra.Command, err error) error {
	var nf *pflag.NotExistError
	if !errors.As(err, &nf) || nf.GetSpecifiedShortnames() != "" || nf.GetSpecifiedName() == "" {
		return err
	}
	name := nf.GetSpecifiedName()
	var names []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	})
	msg := err.Error()
	if best := closest(name, names); best != "" {
		msg += "; did you mean --" + best + "?"
	}
	return fmt.Errorf("%s (see %s --help)", msg, cmd.CommandPath())
}
