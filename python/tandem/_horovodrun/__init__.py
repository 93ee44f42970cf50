"""horovodrun on Tandem: Horovod 0.28.1's command line over Tandem's launchers.

Inside a Slurm allocation the job is one ``srun --horovod=on`` step placed as
``-np``/``-H`` say; outside one, ``tandem-run`` starts the ranks on this host.
Neither has rendezvous logic of its own here: this package only translates
Horovod's flags into those launchers' options and the variables the engine
already reads (docs/launchers.md).

flags        every flag of Horovod's parser: honoured (with the variable it
             sets) or refused (with what to do instead)
config_file  Horovod's --config-file YAML onto the same flags
hosts        -H / --hostfile, and the ranks' placement on them
check_build  -cb, in Horovod's layout, with what this install has
slurm        the srun step inside an allocation
local        tandem-run on this host
output       Horovod's ``[rank]<stdout>:`` lines and --output-filename
main         the command
"""
